/** A short soak: steady load on every transport while every attacker runs, and the server holds. */
import assert from "node:assert/strict";
import { crossedBounds, runSoak } from "../soak/soak.ts";
import { renderSoakSummary } from "../soak/soak_report.ts";
import { runLab, testTransports } from "./support.ts";

const transports = await testTransports();

Deno.test({
  name:
    "a 4-second soak serves every transport without errors and within its bounds while every attacker runs (window 0 on distinct sizes, discovery and handshake floods among them)",
  sanitizeResources: false,
  fn: async () => {
    const report = await runSoak({ transports, durationMs: 4000, intervalMs: 1000, rate: 50 });
    assert.equal(report.serverAlive, true);
    assert.ok(report.intervals.length >= 4, `${report.intervals.length} intervals`);
    for (const t of transports) {
      const s = report.summary[t]!;
      assert.equal(s.errors, 0, `${t}: ${s.errors} errors`);
      assert.ok(s.served >= 0.8 * 4 * 50, `${t}: served ${s.served}`);
      // The whole-run figures are the intervals' figures added up, latency included.
      const slices = report.intervals.map((i) => i.transports[t]!);
      assert.equal(s.served, slices.reduce((n, x) => n + x.served, 0), `${t}: served`);
      assert.ok(s.p50! > 0, `${t}: p50 ${s.p50}`);
      // The server kept answering through every interval (unless this process itself stalled,
      // or the interval is a sliver left after a late one: at 50 req/s, under 0.5 s holds few).
      for (const [k, x] of slices.entries()) {
        const from = k === 0 ? 0 : report.intervals[k - 1].t;
        const span = report.intervals[k].t - from;
        if (report.intervals[k].loadStallMs >= report.intervalMs || span < 0.5) continue;
        assert.ok(
          x.served > 0 && x.p50! > 0,
          `${t}: nothing served from ${from} s to ${report.intervals[k].t} s`,
        );
      }
    }
    const rss = report.intervals.map((i) => i.rssBytes!);
    for (const [k, b] of rss.entries()) assert.ok(b > 0, `no RSS at ${report.intervals[k].t} s`);
    const { after, ...under } = report.rss!;
    assert.deepEqual(under, { start: rss[0], peak: Math.max(...rss), end: rss.at(-1) });
    assert.ok(after !== undefined && after > 0, "RSS read again once the attackers left");
    assert.deepEqual(report.crossed, [], report.crossed.join("; "));
    // Under every attack at once the server grows by at most what docs/limits.md states: the
    // response budget and the payload cache (64 MiB each) held by window-0 clients, plus 128 MiB for
    // the JavaScript heap between collections and the state of some 500 hostile connections.
    const grew = report.rss!.end - report.rss!.start;
    assert.ok(grew < 256 * 2 ** 20, `server RSS grew by ${(grew / 2 ** 20).toFixed(0)} MiB`);
    const a = report.intervals.at(-1)!.attacks;
    assert.ok(a.junkConnections > 0, "junk bytes were sent");
    if (transports.includes("h3")) assert.ok(a.junkDatagrams > 0, "junk datagrams were sent");
    assert.ok(a.idleOpened > 0, "idle connections were held");
    assert.ok(a.zeroWindowOpened > 0, "window-0 clients ran");
    assert.ok(a.resets > 0, "streams were reset");
    assert.ok(a.discoveries > 0, "discovery answers were read");
    if (transports.includes("h2-tls")) assert.ok(a.handshakes > 0, "ClientHellos were sent");
    if (transports.includes("h3")) assert.ok(a.initials > 0, "QUIC Initials were sent");
    const text = renderSoakSummary(report);
    for (const t of transports) assert.match(text, new RegExp(`^${t}\\s+\\d`, "m"));
    assert.match(text, /server RSS: start .*, peak .*, end /);
    assert.match(text, /server: running at the end/);
    assert.match(text, /^bounds: .*: held$/m);
  },
});

Deno.test("a soak names every bound its run crossed", () => {
  const slice = { served: 990, errors: 10, skipped: 0, p50: 1, p99: 1500 };
  const report = {
    schema: "sbilab-soak/1" as const,
    stack: "native" as const,
    startedAt: "2026-12-03T00:00:00.000Z",
    durationMs: 10_000,
    intervalMs: 1000,
    rate: 100,
    size: 256,
    attacks: [],
    intervals: [],
    summary: {
      h2c: { ...slice, ratePerSecond: 99 },
      h3: { ...slice, errors: 0, p99: 20, ratePerSecond: 99 },
    },
    rss: { start: 100 * 2 ** 20, peak: 700 * 2 ** 20, end: 600 * 2 ** 20, after: 300 * 2 ** 20 },
    serverAlive: true,
    bounds: {
      p99Ms: 1000,
      rssGrowthBytes: 512 * 2 ** 20,
      rssAfterBytes: 256 * 2 ** 20,
      errorShare: 0.005,
    },
  };
  assert.deepEqual(crossedBounds(report), [
    "h2c: p99 1.50 s is over 1.00 s",
    "h2c: 10 of 1000 requests failed (over 0.5 %)",
    "RSS grew by 600 MiB, over 512 MiB",
  ]);
  assert.deepEqual(crossedBounds({ ...report, serverAlive: false }).at(0), "the server exited");
});

Deno.test({
  name:
    "a 3-second soak of the deno stack (Deno.serve) serves h2c and h2-TLS without errors under every attack",
  sanitizeResources: false,
  fn: async () => {
    const report = await runSoak({
      stack: "deno",
      transports: ["h2c", "h2-tls"],
      durationMs: 3000,
      intervalMs: 1000,
      rate: 50,
    });
    assert.equal(report.stack, "deno");
    assert.equal(report.serverAlive, true);
    for (const t of ["h2c", "h2-tls"] as const) {
      const s = report.summary[t]!;
      assert.equal(s.errors, 0, `${t}: ${s.errors} errors`);
      assert.ok(s.served >= 0.8 * 3 * 50, `${t}: served ${s.served}`);
    }
    const a = report.intervals.at(-1)!.attacks;
    assert.ok(a.zeroWindowOpened > 0 && a.resets > 0 && a.idleOpened > 0 && a.junkConnections > 0);
    assert.match(renderSoakSummary(report), /deno stack/);
  },
});

Deno.test({
  name: "lab soak exits 1 and names the bound when its run crosses one",
  sanitizeResources: false,
  fn: async () => {
    // No attackers and an h2c p99 bound of 1 µs, which no answer meets.
    const r = await runLab(
      ["soak", "--time", "2", "--transports", "h2c", "--attacks", "none", "--max-p99", "1us", "-q"],
      60_000,
    );
    assert.equal(r.code, 1, r.stderr);
    const last = r.stderr.trim().split("\n").at(-1)!;
    assert.match(
      last,
      /^error: The soak crossed 1 bound\(s\): h2c: p99 [\d.]+ (µs|ms|s) is over 1\.00 µs$/,
    );
    assert.match(new TextDecoder().decode(r.stdout), /^bounds: .*CROSSED: h2c: p99/m);
  },
});
