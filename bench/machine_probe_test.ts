import assert from "node:assert/strict";
import { parseProcStat, processCpuSeconds, procMachineProbe } from "./machine_probe.ts";

Deno.test("parseProcStat reads busy, steal and total seconds from the aggregate cpu line", () => {
  const text = "cpu  100 20 30 800 10 5 15 40 0 0\ncpu0 50 10 15 400 5 2 7 20 0 0\nintr 1\n";
  const t = parseProcStat(text);
  assert.equal(t.busyS, (100 + 20 + 30 + 5 + 15) / 100);
  assert.equal(t.stealS, 0.4);
  assert.equal(t.totalS, (100 + 20 + 30 + 800 + 10 + 5 + 15 + 40) / 100);
  assert.throws(() => parseProcStat("cpu0 1 2 3\n"), SyntaxError);
  assert.throws(() => parseProcStat("cpu  1 2 x 4 5 6 7 8\n"), SyntaxError);
});

Deno.test("the /proc probe charges this process's own work to the client", async () => {
  if (Deno.build.os !== "linux") return;
  const probe = procMachineProbe(Deno.pid);
  const a = (await probe.snapshot("start"))!;
  let x = 0;
  for (let i = 0; i < 5e7; i++) x += i % 7;
  const b = (await probe.snapshot("end"))!;
  assert.ok(x > 0);
  // A loop of 5e7 steps takes well over a millisecond of CPU on any machine.
  assert.ok(b.clientS - a.clientS > 0.001, `client ${b.clientS - a.clientS}`);
  assert.ok(b.serverS - a.serverS > 0.001, `same process as server ${b.serverS - a.serverS}`);
  assert.ok(b.totalS >= a.totalS && b.busyS >= a.busyS);
  assert.equal(processCpuSeconds(2 ** 30), undefined);
});
