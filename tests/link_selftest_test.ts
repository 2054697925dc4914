/** The link selftest passes for the lan, wan and lossy profiles (needs root). */
import assert from "node:assert/strict";
import { parseLinkSpec, runSelftest } from "../linkemu/mod.ts";
import { LINK_SKIP } from "../linkemu/_test_util.ts";

const ignore = LINK_SKIP !== null;

for (const profile of ["lan", "wan", "lossy"]) {
  Deno.test({
    name: `link selftest passes for the ${profile} profile with 10k pipelined probes`,
    ignore,
    fn: async () => {
      const report = await runSelftest(parseLinkSpec(profile), { packets: 10000 });
      const failed = report.checks.filter((c) => c.pass === false).map((c) => c.name);
      assert.deepEqual(failed, [], `failed checks: ${JSON.stringify(report.checks)}`);
      assert.equal(report.passed, true);
      const names = report.checks.map((c) => c.name);
      for (const n of ["rtt", "up delay", "down delay", "up loss", "down loss"]) {
        assert.ok(names.includes(n), `missing check ${n}`);
      }
      // Every judged delay and loss check was measured, not skipped.
      assert.ok(report.checks.every((c) => c.measured !== undefined && c.pass === true));
      // The relay agrees with what the probes saw.
      assert.ok(report.relay, "relay counters");
      assert.ok(report.relay.up.in >= 10000, `relay saw ${report.relay.up.in} probes`);
      const relayUpLoss = report.relay.up.dropLoss / report.relay.up.in;
      const upLoss = report.checks.find((c) => c.name === "up loss")!;
      assert.ok(Math.abs(relayUpLoss - upLoss.measured!) < 0.002, "probe and relay loss agree");
    },
  });
}

Deno.test({
  name: "link selftest measures the rate of a rate-limited link within 10 %",
  ignore,
  fn: async () => {
    const report = await runSelftest(parseLinkSpec("delay=5ms,rate=5mbit,queue=50"), {
      packets: 2000,
    });
    const rate = report.checks.find((c) => c.name === "up rate");
    assert.ok(rate?.measured, "rate measured");
    assert.ok(Math.abs(rate.measured - 5e6) <= 5e5, `measured ${rate.measured} bit/s`);
    assert.equal(report.passed, true, JSON.stringify(report.checks));
  },
});
