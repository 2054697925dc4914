import assert from "node:assert/strict";
import { parseLinkSpec } from "./link_spec.ts";
import { judgeSelftest, PROBE_IP_BYTES, probePlan, type ProbeResult } from "./selftest.ts";

/** A fabricated probe result: every probe took `upMs`/`downMs`, `lostUp`/`lostDown` lost. */
function fakeResult(
  n: number,
  upMs: number,
  downMs: number,
  lostUp: number,
  lostDown: number,
  bulk?: { packets: number; bytes: number; spanNs: number },
): ProbeResult {
  const got = n - lostUp - lostDown;
  return {
    sent: n,
    received: got,
    send_errors: 0,
    probe_ns: 1e9,
    rtt_us: Array(got).fill(Math.round((upMs + downMs) * 1000)),
    up_us: Array(got).fill(Math.round(upMs * 1000)),
    down_us: Array(got).fill(Math.round(downMs * 1000)),
    bulk: { sent: 0, sent_bytes: 0, span_ns: 0 },
    echo: {
      received: n - lostUp,
      unique: n - lostUp,
      replied: n - lostUp,
      bulk_packets: bulk?.packets ?? 0,
      bulk_bytes: bulk?.bytes ?? 0,
      bulk_span_ns: bulk?.spanNs ?? 0,
    },
  };
}

Deno.test("judgeSelftest passes a result that matches the wan profile", () => {
  const spec = parseLinkSpec("wan");
  const plan = probePlan(spec);
  const { passed, checks } = judgeSelftest(spec, plan, fakeResult(10000, 25.1, 25.05, 10, 9));
  assert.equal(passed, true, JSON.stringify(checks));
});

Deno.test("judgeSelftest fails delay off by more than 5 % and loss outside the 99 % interval", () => {
  const spec = parseLinkSpec("wan");
  const plan = probePlan(spec);
  const slow = judgeSelftest(spec, plan, fakeResult(10000, 28, 25, 10, 10));
  assert.deepEqual(slow.checks.filter((c) => c.pass === false).map((c) => c.name), [
    "rtt",
    "up delay",
  ]);
  // 0.5 % measured loss cannot come from a 0.1 % link with 10k packets.
  const lossy = judgeSelftest(spec, plan, fakeResult(10000, 25, 25, 50, 10));
  assert.deepEqual(lossy.checks.filter((c) => c.pass === false).map((c) => c.name), ["up loss"]);
  // A lan link that loses anything fails too.
  const lan = parseLinkSpec("lan");
  const lanLoss = judgeSelftest(lan, probePlan(lan), fakeResult(10000, 0.02, 0.02, 1, 0));
  assert.equal(lanLoss.passed, false);
});

Deno.test("judgeSelftest checks rate within 10 % and explains what it cannot judge", () => {
  const spec = parseLinkSpec("qir");
  const plan = probePlan(spec);
  const ip = 1228;
  const good = fakeResult(10000, 15.05, 15.05, 0, 0, {
    packets: 1001,
    bytes: 1001 * ip,
    spanNs: (1000 * ip * 8 * 1e9) / 10.2e6,
  });
  assert.equal(judgeSelftest(spec, plan, good).passed, true);
  const slow = fakeResult(10000, 15.05, 15.05, 0, 0, {
    packets: 1001,
    bytes: 1001 * ip,
    spanNs: (1000 * ip * 8 * 1e9) / 8e6,
  });
  const r = judgeSelftest(spec, plan, slow);
  assert.deepEqual(r.checks.filter((c) => c.pass === false).map((c) => c.name), ["up rate"]);
  const bh = parseLinkSpec("blackhole");
  const bhChecks = judgeSelftest(bh, probePlan(bh), good).checks;
  assert.match(bhChecks.find((c) => c.name === "up loss")!.note!, /blackhole/);
});

Deno.test("probePlan keeps probes to a fifth of a limited rate and rejects bad counts", () => {
  assert.equal(probePlan(parseLinkSpec("lan")).pps, 10000);
  const qir = probePlan(parseLinkSpec("qir"));
  assert.ok(qir.pps * PROBE_IP_BYTES * 8 <= 0.2 * 10e6 && qir.pps > 4000, `pps ${qir.pps}`);
  assert.equal(qir.bulkBps, 12_500_000);
  assert.ok(probePlan(parseLinkSpec("longrtt")).drainMs > 1500);
  assert.throws(() => probePlan(parseLinkSpec("lan"), { packets: 5 }), RangeError);
});
