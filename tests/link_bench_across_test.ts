/** A quick benchmark across a 20 ms RTT link sees the link's round trip in every request. */
import assert from "node:assert/strict";
import { benchAcrossLink } from "../linkemu/bench_across.ts";
import { parseLinkSpec } from "../linkemu/mod.ts";
import { LINK_SKIP } from "../linkemu/_test_util.ts";

interface Run {
  rows: { transport: string; estimate: { median: number }; errors: number }[];
}

// h2c only for now: the dev PKI's server certificate names localhost/127.0.0.1/::1, not the
// link address, so h2-tls and h3 across a link need `lab serve` to add --host to its SANs.
for (const transport of ["h2c"] as const) {
  Deno.test({
    name: `lab bench across a 20 ms link measures ${transport} warm requests at about 20 ms`,
    ignore: LINK_SKIP !== null,
    fn: async () => {
      const run = await benchAcrossLink(
        parseLinkSpec("rtt=20ms"),
        ["--scenario", "rtt", "--quick", "--sizes", "256", "--no-charts"],
        { transport, timeoutMs: 120000 },
      ) as Run;
      assert.ok(run.rows.length > 0, "rows");
      for (const row of run.rows) {
        assert.equal(row.transport, transport);
        assert.equal(row.errors, 0);
        const ms = row.estimate.median / 1e6;
        // one round trip per warm request: the link's 20 ms plus the lab's own
        assert.ok(ms >= 19.5 && ms < 23, `${transport} median ${ms} ms`);
      }
    },
  });
}
