import assert from "node:assert/strict";
import { ensureBuilt } from "../../lib/native_build.ts";
import { ARMS, parsePeerOutput, runArm } from "./arms.ts";
import { renderProbe } from "./report.ts";

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

Deno.test("the probe's report files each object's instructions per datagram under its part", () => {
  const options = {
    rounds: 0,
    count: 0,
    size: 64,
    warmUp: 0,
    burst: 16,
    callgrindCount: 400,
    seed: 1,
  };
  const arms = ARMS.map((arm) => ({
    arm,
    rounds: [],
    runs: [],
    // per burst of 16: Deno 3,200, JIT 1,600, the library 800, libc 160, unlisted 32
    instructions: arm === "callback"
      ? {
        "deno": 3200,
        "???": 1600,
        "libsbilab_wakeup.so": 800,
        "libc.so.6": 160,
        "(below threshold)": 32,
      }
      : undefined,
  }));
  const text = renderProbe({ options, arms });
  assert.match(
    text,
    /^arm\s+total\s+C \(module\/program \+ libs\)\s+libc \+ ld\.so\s+Deno binary\s+JIT code\s+other$/m,
  );
  const row = text.split("\n").find((l) => l.startsWith("callback"));
  assert.deepEqual(row?.trim().split(/\s+/), ["callback", "362", "50", "10", "200", "100", "2"]);
});
