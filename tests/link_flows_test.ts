/**
 * `lab bench --scenario flows --link`: call flows across an emulated link
 * (needs root). Every request crosses the link, so a step takes at least the
 * link's round trip and a flow at least one round trip per request; speed is
 * never asserted beyond what the configured delay implies.
 */
import assert from "node:assert/strict";
import { runBenchAcrossLink } from "../bench/run/across_link.ts";
import { JOURNEY } from "../study/flows/definitions.ts";
import { parseRun } from "../bench/record/schema.ts";
import { parseLinkSpec } from "../linkemu/mod.ts";
import { LINK_SKIP } from "../linkemu/_test_util.ts";

Deno.test({
  name:
    "flows across metro: every step takes at least the 5 ms RTT, every flow one RTT per request",
  ignore: LINK_SKIP !== null,
  fn: async () => {
    const run = parseRun(JSON.stringify(
      await runBenchAcrossLink(parseLinkSpec("metro"), {
        specText: "metro",
        scenario: "flows",
        transports: ["h2c", "h3"],
        concurrency: [4],
        flows: ["journey"],
        warmupMs: 300,
        samples: 20,
        sampleMs: 20_000,
        childTimeoutMs: 180_000,
      }),
    ));
    assert.equal(run.config.link?.rttMs, 5);
    for (const transport of ["h2c", "h3"]) {
      for (const flow of JOURNEY) {
        const row = run.rows.find((r) =>
          r.transport === transport && r.flow === flow.name && r.step === undefined
        );
        assert.ok(row, `${transport} ${flow.name} has a flow-time row`);
        assert.equal(row.concurrency, 4);
        assert.equal(row.extra?.failed, 0, `${transport} ${flow.name} lost flows`);
        const requests = flow.steps.filter((s) => !s.discover).length;
        assert.ok(
          row.estimate.min >= requests * 5e6,
          `${transport} ${flow.name}: fastest flow ${
            row.estimate.min / 1e6
          } ms < ${requests} × 5 ms`,
        );
        for (const step of flow.steps.filter((s) => !s.discover)) {
          const s = run.rows.find((r) =>
            r.transport === transport && r.flow === flow.name && r.step === step.name
          );
          assert.ok(s, `${transport} ${flow.name} ${step.name} has a step row`);
          assert.ok(s.estimate.min >= 5e6, `${step.name} took ${s.estimate.min / 1e6} ms < 5 ms`);
        }
      }
      const beat = run.rows.find((r) => r.transport === transport && r.step === "nrf.heartbeat");
      assert.ok(beat && beat.estimate.min >= 5e6, `${transport} heartbeats cross the link`);
    }
  },
});
