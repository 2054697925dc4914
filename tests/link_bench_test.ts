/**
 * `lab bench --link`: runs across an emulated link (needs root). A warm
 * round trip across `wan` is the link's 50 ms plus the loopback round trip;
 * `hol` across `lossy` gives per-transport percentiles; `migration` reports
 * a gap per transport. Speed is never asserted: only what the link's
 * configured delay implies and the shape of the record.
 */
import assert from "node:assert/strict";
import { runBenchAcrossLink } from "../bench/run/across_link.ts";
import { type BenchRun, parseRun } from "../bench/record/schema.ts";
import { renderTable } from "../bench/report/table.ts";
import { parseLinkSpec } from "../linkemu/mod.ts";
import { LINK_SKIP } from "../linkemu/_test_util.ts";
import { availableTransports } from "../transports/mod.ts";
import { ROOT } from "../lib/host.ts";

const ignore = LINK_SKIP !== null;

/** Loopback round trips on this machine are well under this (the design brief measured ~0.1 ms). */
const LOOPBACK_ALLOWANCE_MS = 1;

function roundTrip(run: BenchRun): BenchRun {
  return parseRun(JSON.stringify(run), "test");
}

Deno.test({
  name: "a warm h2c and h3 GET across wan takes 50 ms plus the loopback round trip, within 10 %",
  ignore,
  fn: async () => {
    const transports = (await availableTransports()).filter((t) => t === "h2c" || t === "h3");
    assert.ok(transports.includes("h3"), "the h3 module is built (CI builds it)");
    const run = roundTrip(
      await runBenchAcrossLink(parseLinkSpec("wan"), {
        specText: "wan",
        scenario: "rtt",
        transports,
        sizes: [256],
        warmupMs: 300,
        sampleMs: 1500,
        childTimeoutMs: 120_000,
      }),
    );
    assert.equal(run.config.serverMode, "link");
    assert.equal(run.config.link?.spec, "wan");
    assert.equal(run.config.link?.rttMs, 50);
    assert.equal(run.config.link?.up.loss, 0.001);
    assert.ok(
      run.config.link?.counters && run.config.link.counters.up.in > 0,
      "relay counters recorded",
    );
    assert.match(run.floors.skipped ?? "", /emulated link wan/);
    assert.deepEqual(run.rows.map((r) => r.transport), transports);
    for (const row of run.rows) {
      const ms = row.estimate.median / 1e6;
      assert.ok(ms >= 50, `${row.transport} median ${ms} ms is below the link's 50 ms`);
      assert.ok(
        ms <= 1.1 * (50 + LOOPBACK_ALLOWANCE_MS),
        `${row.transport} median ${ms} ms is more than 10 % above 50 ms + loopback`,
      );
    }
    assert.match(renderTable(run), /link wan = .*configured RTT 50 ms/);
  },
});

Deno.test({
  name: "hol across lossy gives p50 ≤ p90 ≤ p99 ≤ p99.9 ≤ max, all ≥ 50 ms, for h2c, h2-tls and h3",
  ignore,
  fn: async () => {
    const run = roundTrip(
      await runBenchAcrossLink(parseLinkSpec("lossy"), {
        specText: "lossy",
        scenario: "hol",
        transports: ["h2c", "h2-tls", "h3"],
        sizes: [16384],
        streams: 8,
        warmupMs: 300,
        sampleMs: 1500,
        childTimeoutMs: 120_000,
      }),
    );
    assert.equal(run.config.streams, 8);
    assert.deepEqual(
      run.rows.map((r) => r.transport),
      ["h2c", "h2-tls", "h3"],
      `rows missing; notes: ${run.notes.join(" | ")}`,
    );
    for (const r of run.rows) {
      const e = r.estimate;
      assert.equal(r.scenario, "hol");
      assert.equal(r.concurrency, 8);
      assert.ok(e.n >= 8, `${r.transport}: ${e.n} samples`);
      assert.ok(e.p50 >= 50e6, `${r.transport} p50 ${e.p50} ns is below the link's RTT`);
      assert.ok(
        e.p50 <= e.p90 && e.p90 <= e.p99 && e.p99 <= e.p999 && e.p999 <= e.max,
        `${r.transport} percentiles ordered`,
      );
    }
    // The relay really lost packets during the run.
    const c = run.config.link!.counters!;
    assert.ok(c.down.dropLoss + c.up.dropLoss > 0, "no packet was lost on a 2 % loss link");
    const table = renderTable(run);
    assert.match(table, /Per-request latency percentiles/);
  },
});

Deno.test({
  name:
    "migration across a 20 ms link reports a gap, recovery and connection continuity per transport",
  ignore,
  fn: async () => {
    const run = roundTrip(
      await runBenchAcrossLink(parseLinkSpec("rtt=20ms"), {
        scenario: "migration",
        transports: ["h2c", "h3"],
        warmupMs: 300,
        sampleMs: 3000,
        childTimeoutMs: 120_000,
      }),
    );
    assert.deepEqual(run.rows.map((r) => r.transport), ["h2c", "h3"]);
    for (const r of run.rows) {
      const x = r.extra!;
      assert.equal(r.scenario, "migration");
      assert.ok(x.gapMs >= 20, `${r.transport} gap ${x.gapMs} ms is shorter than one round trip`);
      assert.ok(x.maxIntervalMs >= x.gapMs, "the longest interval includes the gap");
      assert.equal(x.recovered, 1, `${r.transport} answered again after the change`);
      assert.ok(x.completedBefore > 0 && x.completedAfter > 0);
    }
    // TCP cannot follow a port change: the server resets the unknown 4-tuple.
    const h2c = run.rows.find((r) => r.transport === "h2c")!;
    assert.equal(h2c.extra!.sameConnection, 0, "h2c kept its TCP connection across a port change");
  },
});

Deno.test("lab bench --link with a bad spec fails with one line and exit 2", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-net",
      "--quiet",
      `${ROOT}/main.ts`,
      "bench",
      "--link",
      "rtt=fast",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(out.stderr).trim();
  assert.equal(out.code, 2);
  assert.equal(err.split("\n").length, 1, err);
  assert.match(err, /^error: --link: Bad value for rtt: "fast"/);
});

Deno.test("lab bench --scenario migration without --link says it needs a link", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-net",
      "--quiet",
      `${ROOT}/main.ts`,
      "bench",
      "--scenario",
      "migration",
      "--transports",
      "h2c",
      "--no-floors",
      "--quick",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(out.stderr).trim();
  assert.notEqual(out.code, 0);
  assert.equal(err.split("\n").length, 1, err);
  assert.match(err, /needs --link/);
});
