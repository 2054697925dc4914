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

Deno.test("a busy loop on the server's CPU shows up as other processes' CPU in the probe's readings", async () => {
  if (Deno.build.os !== "linux") return;
  // The loop runs a fixed number of steps (not a time), then reports and waits to be stopped.
  const script = "let x = 0; for (let i = 0; i < 2e8; i++) x = (x + i) % 1000003;" +
    "console.log('done', x); await new Promise((r) => setTimeout(r, 60000));";
  const hasTaskset = await new Deno.Command("taskset", { args: ["-V"], stdout: "null" })
    .output().then((o) => o.success, () => false);
  const cmd = hasTaskset && navigator.hardwareConcurrency > 1
    ? ["taskset", "-c", "1", Deno.execPath()]
    : [Deno.execPath()];
  const probe = procMachineProbe();
  const a = (await probe.snapshot("start"))!;
  const child = new Deno.Command(cmd[0], {
    args: [...cmd.slice(1), "eval", script],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  try {
    const reader = child.stdout.getReader();
    let text = "";
    while (!text.includes("done")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    reader.releaseLock();
    const busy = processCpuSeconds(child.pid)!;
    const b = (await probe.snapshot("end"))!;
    assert.match(text, /done/);
    assert.ok(busy > 0.1, `the loop used ${busy} s`);
    // Others on the machine only add to the figure; /proc/stat counts in 10 ms ticks.
    const other = (b.busyS - a.busyS) - (b.clientS - a.clientS);
    assert.ok(other >= busy * 0.75, `other ${other} s for a loop of ${busy} s`);
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await child.stdout.cancel().catch(() => {});
  }
});
