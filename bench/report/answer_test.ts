import assert from "node:assert/strict";
import { answerLines, legendLines, warningLines } from "./answer.ts";
import { compareRuns, comparisonAnswer, regressions, renderComparison } from "./compare.ts";
import { renderTable } from "./table.ts";
import { renderMarkdown } from "./markdown.ts";
import { renderHtml } from "./html.ts";
import type { ReportSection } from "./report_sections.ts";
import { syntheticRtt } from "../../tests/synthetic_run.ts";
import type { ResultRow } from "../record/schema.ts";
import { PEER_RATIOS } from "../record/peer_ratios.ts";

Deno.test("the answer states h3 over h2-TLS per size with its paired interval and says lower is better", () => {
  const run = syntheticRtt(5, { h3Cost: 1.3 });
  const [line] = answerLines(run);
  const m = line.match(
    /^h3 took (\d+\.\d+)× \[(\d+\.\d+)–(\d+\.\d+)\] per 256 B request and .+ per 16 KiB request as long as h2-TLS \(lower is better\)\.$/,
  );
  assert.ok(m, line);
  const [ratio, lo, hi] = m.slice(1).map(Number);
  assert.ok(lo <= ratio && ratio <= hi && lo < 1.3 && 1.3 < hi, line);
  assert.ok(renderTable(run).startsWith(line), "the terminal report opens with the answer");
  assert.match(renderMarkdown(run), new RegExp(`^# .*\\n\\n\\*\\*h3 took`));
});

Deno.test("a section that leads opens every report in place of the answer", () => {
  const run = syntheticRtt(5, { h3Cost: 1.3 });
  const lead: ReportSection = {
    id: "verdict",
    title: "Verdict",
    lead: true,
    render: () => ({
      summary: "HTTP/3 has a material advantage in 1 of 2 cells.",
      notes: [],
      table: { header: ["cell"], body: [["wan"]] },
    }),
  };
  const options = { sections: [lead] };
  const md = renderMarkdown(run, options);
  assert.match(
    md,
    /^# .*\n\n## Verdict\n\n\*\*HTTP\/3 has a material advantage in 1 of 2 cells\.\*\*/,
  );
  assert.equal(md.match(/## Verdict/g)?.length, 1, "the section is shown once");
  assert.doesNotMatch(md, /as long as/);
  assert.ok(renderTable(run, options).startsWith("Verdict: HTTP/3 has"));
  assert.doesNotMatch(renderTable(run, options), /as long as/);
  const lib = { name: "stub", version: "0", source: "" };
  const html = renderHtml(run, lib, options);
  assert.doesNotMatch(html, /as long as/);
  assert.ok(html.indexOf("material advantage") < html.indexOf('class="meta"'));
  // Without a leading section the answer is back.
  assert.match(renderMarkdown(run), /^# .*\n\n\*\*h3 took/);
});

Deno.test("the answer says whether --runs agreed", () => {
  const run = syntheticRtt(6);
  const mk = (v: number) => ({
    id: "h3/h2-tls/256",
    label: "h3 ÷ h2-tls",
    mean: v,
    min: v,
    max: v,
  });
  run.repeats = {
    runs: [{ startedAt: "", durationMs: 0, ratios: [], noisy: false }, {
      startedAt: "",
      durationMs: 0,
      ratios: [],
      noisy: false,
    }, { startedAt: "", durationMs: 0, ratios: [], noisy: false }],
    spread: [{ ...mk(1.3), min: 1.25, max: 1.34, maxDeviation: 0.04 }],
  };
  assert.match(answerLines(run)[0], /; 3 runs agreed \(within ±4\.0 %\)\.$/);
  run.repeats.spread = [{ ...mk(1.0), min: 0.95, max: 1.4, maxDeviation: 0.3 }];
  assert.match(answerLines(run)[0], /3 runs disagreed \(h3 ÷ h2-tls went from 0\.95× to 1\.40×\)/);
});

Deno.test("a concurrency run's answer compares requests per second, higher being better", () => {
  const run = syntheticRtt(7);
  run.config.scenario = "concurrency";
  run.rounds = undefined;
  run.rows = run.rows.filter((r) => r.sizeBytes === 256).flatMap((r) =>
    [1, 64].map((n) => ({
      ...r,
      id: `concurrency/${r.transport}/256/${n}`,
      scenario: "concurrency" as const,
      concurrency: n,
      label: `GET 256 B, ${n} in flight`,
      requestsPerSecond: (r.transport === "h3" ? 40_000 : 50_000) * (n === 64 ? 4 : 1),
    }))
  );
  const lines = answerLines(run);
  assert.equal(lines.length, 2);
  assert.match(lines[0], /^At 64 in flight, h3 served 0\.80× the requests per second of h2-TLS/);
  assert.match(lines[0], /higher is better/);
  assert.match(lines[1], /^At 1 in flight/);
});

function withEstimate(r: ResultRow, e: Partial<ResultRow["estimate"]>): ResultRow {
  return { ...r, estimate: { ...r.estimate, ...e } };
}

Deno.test("rows whose figures contradict each other get a warning naming the cause", () => {
  const run = syntheticRtt(8);
  const i = run.rows.findIndex((r) => r.transport === "h2-tls" && r.sizeBytes === 16384);
  const r = run.rows[i];
  // A median of 245 µs at 1 in flight implies about 4.08k req/s; the row ran 1.92k (a tail).
  run.rows[i] = {
    ...withEstimate(r, {
      median: 244_900,
      mean: 520_000,
      p99: 5_150_000,
      n: 10_000,
      outliers: { lowMild: 0, lowSevere: 0, highMild: 10, highSevere: 946 },
      medianCi: { level: 0.95, lower: 240_000, upper: 250_000 },
    }),
    requestsPerSecond: 1920,
  };
  const w = warningLines(run);
  assert.ok(
    w.some((l) =>
      /h2-TLS \(native\) 16 KiB: the median 245 µs implies about 4\.08k/.test(l) &&
      /a tail carries the time/.test(l) && /946 severe outliers \(9\.5 % of 10000\)/.test(l)
    ),
    w.join("\n"),
  );
  // h3's 16 KiB row faster than its 256 B row, beyond both intervals.
  const small = run.rows.find((r) => r.transport === "h3" && r.sizeBytes === 256)!;
  const j = run.rows.findIndex((r) => r.transport === "h3" && r.sizeBytes === 16384);
  run.rows[j] = withEstimate(run.rows[j], {
    median: small.estimate.median * 0.7,
    medianCi: {
      level: 0.95,
      lower: small.estimate.median * 0.68,
      upper: small.estimate.median * 0.72,
    },
  });
  const w2 = warningLines(run);
  assert.ok(w2.some((l) => /^h3 16 KiB .* ran faster than 256 B .* beyond both intervals/.test(l)));
  assert.match(renderTable(run), /\nwarning: h2-TLS \(native\) 16 KiB: the median/);
  // A run without contradictions has none.
  assert.deepEqual(warningLines(syntheticRtt(9)), []);
});

Deno.test("a tail warning fires when the mean is twice the median, not for outliers and a long p99 that latency always has", () => {
  const run = syntheticRtt(11);
  const i = run.rows.findIndex((r) => r.transport === "h2c" && r.sizeBytes === 256);
  const r = run.rows[i];
  const rate = { requestsPerSecond: 1e9 / 80_000 };
  // what every row on a shared VM looks like: 8 % severe outliers, p99 34× the median
  run.rows[i] = {
    ...withEstimate(r, {
      median: 80_000,
      mean: 150_000,
      p99: 2_730_000,
      n: 1364,
      outliers: { lowMild: 0, lowSevere: 0, highMild: 108, highSevere: 110 },
    }),
    ...rate,
  };
  assert.deepEqual(warningLines(run), []);
  // the tail carries the time: the mean is 2.5× the median
  run.rows[i] = { ...withEstimate(run.rows[i], { mean: 200_000 }), ...rate };
  const w = warningLines(run);
  assert.equal(w.length, 1, w.join("\n"));
  assert.match(
    w[0],
    /^h2c \(native\) 256 B: the tail carries the time \(p99 2\.73 ms .* mean 200 µs is 2\.50× it/,
  );
});

Deno.test("the legend explains the floor, outlier and interval columns, and × TCP floor is one reference", () => {
  const run = syntheticRtt(10);
  const legend = legendLines(run).join("\n");
  for (const w of ["× own floor", "× TCP floor", "outl. m/s", "95 % interval", "lower is better"]) {
    assert.ok(legend.includes(w), w);
  }
  const table = renderTable(run);
  assert.match(table, /× own floor\s+× TCP floor/);
  // h3's TCP multiple is its median over the TCP floor, not the UDP one.
  const h3 = run.rows.find((r) => r.transport === "h3" && r.sizeBytes === 256)!;
  const tcp = run.floors.rows.find((f) => f.protocol === "tcp" && f.sizeBytes === 256)!;
  const want = `${(h3.estimate.median / tcp.estimate.median).toFixed(2)}×`;
  const line = table.split("\n").find((l) => l.startsWith("h3 ") && l.includes("GET 256 B"))!;
  assert.ok(line.includes(want), `${want} in ${line}`);
});

function aa(seedA: number, seedB: number, options = {}): ReturnType<typeof compareRuns> {
  return compareRuns(syntheticRtt(seedA), syntheticRtt(seedB, options));
}

Deno.test("an A/A comparison of runs from the same distribution reports no change, rows and ratios", () => {
  for (const [a, b] of [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]]) {
    const cmp = aa(a, b);
    assert.deepEqual(regressions(cmp), [], `seeds ${a}/${b}`);
    assert.equal(cmp.ratios.length, 4);
    for (const r of [...cmp.rows, ...cmp.ratios]) {
      assert.ok(["within noise", "no change"].includes(r.verdict), `${r.id}: ${r.verdict}`);
    }
    assert.match(comparisonAnswer(cmp), /^No change/);
  }
});

Deno.test("a machine 6 % slower in B moves floors and rows alike: no regression, the shift is named", () => {
  const cmp = aa(11, 12, { machine: 1.06 });
  assert.ok(cmp.machineShift > 0.03, String(cmp.machineShift));
  assert.deepEqual(regressions(cmp), []);
  assert.match(renderComparison(cmp), /the kernel floors moved up to \d+\.\d % between the runs/);
});

Deno.test("a planted regression (h3 25 % dearer) is reported in its rows and ratios", () => {
  const cmp = aa(13, 14, { h3Cost: 1.3 * 1.25 });
  const bad = regressions(cmp);
  assert.ok(bad.some((b) => /^h3 ÷ h2-tls 256 B$/.test(b)), bad.join("; "));
  assert.ok(bad.some((b) => /^h3 GET 16 KiB/.test(b)), bad.join("; "));
  assert.ok(!bad.some((b) => /h2c|^h2-tls/.test(b)), bad.join("; "));
  assert.match(comparisonAnswer(cmp), /regressed/);
});

Deno.test("an answer whose interval holds 1 says the run cannot tell the transports apart there", () => {
  const run = syntheticRtt(15, { h3Cost: 1 });
  const line = answerLines(run)[0];
  const i = run.rounds!.ratios.find((r) => r.id === "h3/h2-tls/256")!.interval;
  if (i.lower <= 1 && i.upper >= 1) {
    assert.match(line, /per 256 B request hold(s)? 1: there the run cannot tell the two apart/);
  }
  assert.doesNotMatch(answerLines(syntheticRtt(15, { h3Cost: 1.3 }))[0], /cannot tell/);
});

Deno.test("a concurrency row that ran fewer requests in flight than planned is named by Little's law", async () => {
  const { syntheticConcurrency } = await import("../../tests/synthetic_run.ts");
  const run = syntheticConcurrency(16);
  const i = run.rows.findIndex((r) => r.transport === "h3" && r.concurrency === 64);
  const r = run.rows[i];
  // Half the latency at a quarter of the rate: about 8 in flight, not 64.
  run.rows[i] = {
    ...withEstimate(r, { median: r.estimate.median / 2, mean: r.estimate.mean / 2 }),
    samples: { ...r.samples, samples: r.samples.samples.map((x) => x / 2) },
    requestsPerSecond: r.requestsPerSecond! / 4,
  };
  const w = warningLines(run).find((l) => l.startsWith("h3 (native) 256 B at 64 in flight"));
  assert.ok(w, warningLines(run).join("\n"));
  assert.match(w, /only about 8 requests were in flight, not 64/);
  assert.match(answerLines(run)[0], /rate and latency disagree/);
});

Deno.test("capacity and cold answers compare sustained rate and set-up time", () => {
  const cap = syntheticRtt(17);
  cap.config.scenario = "capacity";
  cap.config.p99BoundMs = 10;
  cap.rounds = undefined;
  cap.rows = cap.rows.filter((r) => r.sizeBytes === 256).map((r) => ({
    ...r,
    id: `capacity/native/${r.transport}/256/10`,
    scenario: "capacity" as const,
    label: "highest rate with p99 ≤ 10 ms, GET 256 B (native engine)",
    requestsPerSecond: r.transport === "h3" ? 30_000 : 60_000,
  }));
  assert.match(
    answerLines(cap)[0],
    /^h3 sustained 0\.50× the request rate of h2-TLS with p99 ≤ 10 ms, 256 B GET .*higher is better/,
  );
  const cold = syntheticRtt(18);
  cold.config.scenario = "cold";
  cold.rounds = undefined;
  cold.rows = cold.rows.filter((r) => r.sizeBytes === 256).flatMap((r) =>
    ["connect", "total"].map((phase) => ({
      ...r,
      id: `cold/${r.transport}/full/${phase}`,
      scenario: "cold" as const,
      label: `full handshake: ${phase} (new client, 256 B GET)`,
    }))
  );
  const line = answerLines(cold)[0];
  assert.match(
    line,
    /^h3 took 1\.\d\d× \[[\d.]+–[\d.]+\] as long as h2-TLS to set up a connection/,
  );
  assert.match(line, /full handshake: total/);
  assert.equal(answerLines(cold).length, 1, "only the total phase is the answer");
});

Deno.test("a peers run's answer states our servers' rates and our client's time against the C tools", () => {
  const run = syntheticRtt(8);
  run.config.scenario = "peers";
  const ratio = (label: string, value: number) => ({
    id: `peers/${label}`,
    label,
    kind: "peers" as const,
    numerator: "a",
    denominator: "b",
    sizeBytes: 256,
    ratio: value,
    interval: { level: 0.95, lower: value - 0.02, upper: value + 0.03 },
    medianOfRounds: value,
    cv: 0.02,
    perRound: [value, value],
  });
  run.rounds!.ratios = [
    ratio(`${PEER_RATIOS.h2Server}, 1 stream`, 0.87),
    ratio(`${PEER_RATIOS.h2Server}, 64 streams`, 0.95),
    ratio(`${PEER_RATIOS.h2Server}, 8 × 64 streams`, 0.9),
    ratio(`${PEER_RATIOS.h3Server}, 1 stream`, 0.72),
    ratio(`${PEER_RATIOS.h2Client}, 1 stream`, 1.12),
  ];
  run.rounds!.noise.noisy = false;
  assert.deepEqual(answerLines(run), [
    "Our h2c server served 0.87× [0.85–0.90] at 1 stream and 0.95× [0.93–0.98] at 64 nghttpd's " +
    "requests per second; our h3 server 0.72× [0.70–0.75] at 1 stream gtlsserver's (higher is " +
    "better); our SBI client took 1.12× [1.10–1.15] h2load's time per request at 1 stream (lower " +
    "is better).",
  ]);
  run.rounds!.ratios = [];
  assert.deepEqual(answerLines(run), []);
});

Deno.test("a run with the stacks alone states their h3 ÷ h2c beside sbilab's ratios and the time sbilab adds per transport", async () => {
  // sbilab: h2c 70 µs, h3 1.3 × 77 µs = 100.1 µs; the stacks alone: h2c 40 µs, h3 80 µs (2×).
  const run = syntheticRtt(21, { stacks: { h2c: 40_000, h3: 80_000 } });
  const stacks = run.rounds!.ratios.filter((r) => r.kind === "stacks");
  assert.deepEqual(stacks.map((r) => r.id), ["stacks/h3/h2c/256", "stacks/h3/h2c/16384"]);
  const lines = answerLines(run);
  assert.equal(lines.length, 3, lines.join("\n"));
  const m = lines[1].match(
    /^The stacks alone \(C, no runtime\): h3 ÷ h2c = (\d+\.\d+)× \[(\d+\.\d+)–(\d+\.\d+)\] per 256 B request \(sbilab: h3 ÷ h2c (\d+\.\d+)× \[[\d.–]+\], h3 ÷ h2-TLS (\d+\.\d+)× \[[\d.–]+\]\); h3 ÷ h2c = .+ per 16 KiB request \(sbilab: .+\)\.$/,
  );
  assert.ok(m, lines[1]);
  const [ratio, lo, hi, ownH2c, ownTls] = m.slice(1).map(Number);
  assert.ok(lo <= 2 && 2 <= hi && lo <= ratio && ratio <= hi, lines[1]);
  assert.ok(Math.abs(ownH2c - 100.1 / 70) < 0.05 && Math.abs(ownTls - 1.3) < 0.05, lines[1]);
  // Added: h2c 70 − 40 = 30 µs, h3 100.1 − 80 = 20.1 µs at 256 B (× 1.4 at 16 KiB).
  assert.match(
    lines[2],
    /^sbilab's own time over the stacks alone \(its row's median − theirs, paired by round\): [\d.]+ µs \[[\d.]+ – [\d.]+\] per h2c request, [\d.]+ µs \[[\d.]+ – [\d.]+\] per h3 request at 256 B; .+ at 16 KiB\.$/,
  );
  for (const a of run.rounds!.added!) {
    const want = (a.transport === "h2c" ? 30_000 : 20_100) * (a.sizeBytes === 256 ? 1 : 1.4);
    assert.ok(a.interval.lower <= want && want <= a.interval.upper, JSON.stringify(a));
    assert.ok(Math.abs(a.addedNs / want - 1) < 0.1, JSON.stringify(a));
  }
  // Every report gives the lines; the floors table names the arms; the ratio table lists them.
  const table = renderTable(run);
  assert.ok(table.includes(lines[1]) && table.includes(lines[2]));
  assert.match(table, /stacks alone h3\s+16 KiB/);
  assert.match(table, /stacks alone h3 ÷ h2c\s+256 B/);
  const md = renderMarkdown(run);
  assert.ok(md.includes(`**${lines[1]}**`) && md.includes(`**${lines[2]}**`));
  assert.match(md, /\| stacks alone h2c \| 256 B \|/);
  assert.match(md, /The stacks alone are a GET of the same size instead, .*sbilab's h3 module/);
  const lib = { name: "stub", version: "0", source: "" };
  const { renderHtml } = await import("./html.ts");
  assert.ok(renderHtml(run, lib).includes("The stacks alone (C, no runtime): h3 ÷ h2c = "));
  // A run without the arms says nothing of them.
  assert.equal(answerLines(syntheticRtt(21)).length, 1);
});

Deno.test("with an h2-over-TLS stacks-alone arm the stacks' h3 ÷ h2-TLS stands beside sbilab's", () => {
  const run = syntheticRtt(22, { stacks: { "h2c": 40_000, "h2-tls": 45_000, "h3": 72_000 } });
  assert.deepEqual(
    run.rounds!.ratios.filter((r) => r.kind === "stacks" && r.sizeBytes === 256).map((r) => r.id),
    ["stacks/h3/h2-tls/256", "stacks/h2-tls/h2c/256"],
  );
  const line = answerLines(run)[1];
  const m = line.match(
    /^The stacks alone \(C, no runtime\): h3 ÷ h2-TLS = (\d+\.\d+)× \[(\d+\.\d+)–(\d+\.\d+)\] per 256 B request \(sbilab: h3 ÷ h2-TLS (\d+\.\d+)× \[[\d.–]+\]\); /,
  );
  assert.ok(m, line);
  const [ratio, lo, hi, own] = m.slice(1).map(Number);
  assert.ok(lo <= 1.6 && 1.6 <= hi && Math.abs(ratio - 1.6) < 0.05, line);
  assert.ok(Math.abs(own - 1.3) < 0.05, line);
  assert.match(answerLines(run)[2], /per h2-TLS request/);
});
