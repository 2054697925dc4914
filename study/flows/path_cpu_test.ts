import assert from "node:assert/strict";
import { PathCpu, type PathReading, procPathProbe, threadSeconds } from "./path_cpu.ts";

const at = (atMs: number, threads: PathReading["threads"], machineBusyS?: number): PathReading => ({
  atMs,
  threads,
  ...(machineBusyS !== undefined ? { machineBusyS } : {}),
});

Deno.test("PathCpu names a process saturated by its busiest thread, not by its thread count", () => {
  const cpu = new PathCpu();
  // Two blocks of 1 s: the server's thread 7 runs 0.95 s of each; five client threads 0.2 s each.
  cpu.add(
    at(0, { server: { "7": 10, "8": 0 }, client: { a: 0, b: 0, c: 0, d: 0, e: 0 } }, 100),
    at(1000, {
      server: { "7": 10.95, "8": 0.1 },
      client: { a: 0.2, b: 0.2, c: 0.2, d: 0.2, e: 0.2 },
    }, 102.5),
  );
  cpu.add(
    at(
      1500,
      { server: { "7": 11, "8": 0.1 }, client: { a: 0.3, b: 0.3, c: 0.3, d: 0.3, e: 0.3 } },
      103,
    ),
    at(2500, {
      server: { "7": 11.95, "8": 0.2 },
      client: { a: 0.5, b: 0.5, c: 0.5, d: 0.5, e: 0.5 },
    }, 105.5),
  );
  const s = cpu.shares();
  assert.ok(Math.abs(s.server - 0.95) < 1e-9, `server ${s.server}`);
  assert.ok(Math.abs(s.client - 0.2) < 1e-9, `client ${s.client}`);
  // Machine busy 5 s over 2 s of blocks; the watched processes ran 0.95+0.1+1 per block.
  assert.ok(Math.abs(s.others - (5 - 2 * 2.05) / 2) < 1e-9, `others ${s.others}`);
  // What each process's work cost: every thread's run time, summed over the blocks.
  const total = cpu.seconds();
  assert.ok(Math.abs(total.server - 2.1) < 1e-9, `server ${total.server}`);
  assert.ok(Math.abs(total.client - 2.0) < 1e-9, `client ${total.client}`);
});

Deno.test("the /proc probe charges a busy loop to this process's busiest thread", () => {
  const tid = String(Deno.pid); // the main thread's id is the process id
  const own = () => threadSeconds(Deno.pid)?.[tid];
  const start = own();
  if (start === undefined) return; // not Linux
  const probe = procPathProbe({ client: Deno.pid });
  const a = probe.read();
  // Spin until the main thread itself has run 40 ms (bounded by 10 s of wall time).
  const deadline = performance.now() + 10_000;
  let x = 0;
  while (own()! - start < 0.04 && performance.now() < deadline) {
    for (let i = 0; i < 10_000; i++) x += Math.sqrt(x + i);
  }
  const b = probe.read();
  const cpu = new PathCpu();
  cpu.add(a, b);
  assert.ok(x > 0);
  const busiestS = cpu.shares().client * (b.atMs - a.atMs) / 1000;
  assert.ok(busiestS >= 0.04 - 1e-3, `busiest thread ${busiestS} s`);
  assert.ok(cpu.shares().client <= 1.05, JSON.stringify(cpu.shares()));
});
