import assert from "node:assert/strict";
import { ensureBuilt } from "../../lib/native_build.ts";
import { ARMS, parsePeerOutput, runArm } from "./arms.ts";
import { instructionsByObject, perRoundTrip } from "./probe.ts";
import { instructionGroups } from "./report.ts";

const paths = {
  library: await ensureBuilt("wakeup", { quiet: true }),
  peer: await ensureBuilt("wakeup_peer", { quiet: true }),
};

for (const arm of ARMS) {
  for (const burst of [1, 16]) {
    Deno.test(`${arm} echo answers every datagram once with its bytes (bursts of ${burst})`, async () => {
      const r = await runArm(arm, paths, { count: 50, size: 100, warmUp: 5, burst, maxMs: 60_000 });
      assert.equal(r.samples.length, 50);
      assert.equal(r.peer.sent, 55 * burst);
      assert.equal(r.peer.answered, 55 * burst);
      assert.equal(r.peer.stray, 0);
      assert.equal(r.peer.wrong, 0);
      if (arm === "kernel" || arm === "deno") return;
      // The library read every datagram, the ending one too, with its ECT(0) mark,
      // JavaScript answered each once, and the thread sent each answer once.
      assert.equal(r.side.received, 55 * burst + 1);
      assert.equal(r.side.ect0, 55 * burst + 1);
      assert.equal(r.side.noTos, 0);
      assert.equal(r.side.answered, 55 * burst);
      assert.equal(r.side.answeredEct0, 55 * burst);
      assert.equal(r.side.sent, 55 * burst);
      // Replies leave the library marked ECT(0) as well.
      assert.equal(r.peer.marked, 55 * burst);
      assert.ok(r.side.batches >= 1 && r.side.batches <= r.side.received);
    });
  }
}

Deno.test("parsePeerOutput reads the samples and the summary, and rejects output without one", () => {
  const p = parsePeerOutput("1200\n1300\n# sent=2 answered=2 stray=0 wrong=0 marked=2\n");
  assert.deepEqual(p.samples, [1200, 1300]);
  assert.deepEqual(p.peer, { sent: 2, answered: 2, stray: 0, wrong: 0, marked: 2 });
  assert.throws(() => parsePeerOutput("1200\n"), SyntaxError);
});

Deno.test("perRoundTrip cancels what both runs share and groups objects by who runs them", () => {
  const small = new Map([["deno", 1_000_000], ["libsbilab_wakeup.so", 10_000], ["libc.so.6", 500]]);
  const large = new Map([
    ["deno", 1_300_000],
    ["libsbilab_wakeup.so", 40_000],
    ["libc.so.6", 500],
    ["???", 60_000],
  ]);
  const per = perRoundTrip(small, 100, large, 400);
  assert.deepEqual(per, {
    "deno": 1000,
    "libsbilab_wakeup.so": 100,
    "libc.so.6": 0,
    "???": 200,
  });
  assert.deepEqual(instructionGroups(per), {
    total: 1300,
    runtime: 1000,
    jit: 200,
    c: 100,
    libc: 0,
    other: 0,
  });
  assert.throws(() => perRoundTrip(small, 100, large, 100), RangeError);
});

Deno.test("instructionsByObject gives inlined lines to their function's object and keeps the rest", () => {
  const text = `
1,000 (100.0%)  PROGRAM TOTALS
  500 (50.00%)  ./elf/dl-lookup.c:do_lookup_x [/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2]
  200 (20.00%)  ./elf/dl-new-hash.h:do_lookup_x
  150 (15.00%)  ???:0x0000000012345678 [???]
  100 (10.00%)  wakeup.c:wk_kick [/repo/build/libsbilab_wakeup.so]
   30 ( 3.00%)  stdatomic.h:helper
`;
  assert.deepEqual(
    Object.fromEntries(instructionsByObject(text)),
    {
      "ld-linux-x86-64.so.2": 700,
      "???": 150,
      "libsbilab_wakeup.so": 100,
      "(no object)": 30,
      "(below threshold)": 20,
    },
  );
  assert.throws(() => instructionsByObject("nothing"), SyntaxError);
});
