/**
 * What every report opens with: the comparison in words with its interval
 * ("h3 took 1.38× [1.31–1.45] as long as h2-TLS per 256 B request (lower is
 * better); 3 runs agreed"), the legend of the row table's columns, and a
 * warning for each row whose figures contradict each other, naming the cause
 * the data shows. Pure functions of the run record, shared by the terminal
 * table, Markdown and HTML.
 */
import { findFloor } from "../record/floor_lookup.ts";
import { ratioRecord } from "../record/rounds_summary.ts";
import { compareMedians, type Interval } from "../stats/stats.ts";
import type { BenchRun, RatioRecord, ResultRow } from "../record/schema.ts";
import {
  formatBytes,
  formatDuration,
  formatDurationWithInterval,
  formatMultiple,
  formatRate,
} from "../../lib/units.ts";
import { PEER_RATIOS } from "../record/peer_ratios.ts";

/** How a transport is named in sentences. */
export function transportName(t: string): string {
  return t === "h2-tls" ? "h2-TLS" : t;
}

/** The pairs an answer states, most wanted first: numerator, denominator. */
const PAIRS: readonly [string, string][] = [["h3", "h2-tls"], ["h2-tls", "h2c"], ["h3", "h2c"]];

/** A ratio with its interval, as the answer states it. */
export interface AnswerRatio {
  numerator: string;
  denominator: string;
  ratio: number;
  /** Absent when the rows give no way to bound it (one figure per row). */
  interval?: Interval;
}

/** `1.38× [1.31–1.45]`. */
function withInterval(r: AnswerRatio): string {
  return formatMultiple(r.ratio) +
    (r.interval ? ` [${r.interval.lower.toFixed(2)}–${r.interval.upper.toFixed(2)}]` : "");
}

/** At most this many samples per side go into a bootstrap made at report time. */
const MAX_BOOT = 4000;

function thin(x: readonly number[]): number[] {
  if (x.length <= MAX_BOOT) return [...x];
  const step = x.length / MAX_BOOT;
  return Array.from({ length: MAX_BOOT }, (_, i) => x[Math.floor(i * step)]);
}

/**
 * Median ratio of two rows, `num ÷ den`: the paired ratio over rounds when the
 * run has one, else a bootstrap over the rows' samples.
 */
export function rowRatio(run: BenchRun, num: ResultRow, den: ResultRow): AnswerRatio {
  const paired: RatioRecord | undefined = run.rounds?.ratios.find((r) =>
    r.kind === "transports" && r.numerator === num.id && r.denominator === den.id
  );
  const base = { numerator: num.transport, denominator: den.transport };
  if (paired) return { ...base, ratio: paired.ratio, interval: paired.interval };
  const ratio = num.estimate.median / den.estimate.median;
  const a = den.samples.samples, b = num.samples.samples;
  if (a.length < 2 || b.length < 2) return { ...base, ratio };
  const cmp = compareMedians(thin(a), thin(b), { resamples: 300 });
  return {
    ...base,
    ratio,
    interval: { level: 0.95, lower: 1 + cmp.changeCi.lower, upper: 1 + cmp.changeCi.upper },
  };
}

/** The first pair of `PAIRS` whose both transports have a row in `rows`. */
function pickPair(rows: readonly ResultRow[]): [ResultRow, ResultRow] | undefined {
  for (const [n, d] of PAIRS) {
    const num = rows.find((r) => r.transport === n);
    const den = rows.find((r) => r.transport === d);
    if (num && den) return [num, den];
  }
  return undefined;
}

/** Rows that differ only by transport, grouped (first-seen order). */
function cellsOf(rows: readonly ResultRow[]): ResultRow[][] {
  const out = new Map<string, ResultRow[]>();
  for (const r of rows) {
    const key = [r.scenario, r.stack, r.engine, r.sizeBytes, r.concurrency, r.link, r.flow, r.step]
      .join("|") + "|" + r.label;
    out.set(key, [...(out.get(key) ?? []), r]);
  }
  return [...out.values()];
}

const sizeWords = (r: ResultRow) => r.sizeBytes !== undefined ? `${formatBytes(r.sizeBytes)} ` : "";

/** What `--runs` showed about the run's transport ratios, as a clause. */
function runsClause(run: BenchRun, ids: string[]): string {
  const rep = run.repeats;
  if (!rep || rep.runs.length < 2) return "";
  const n = rep.runs.length;
  const spread = rep.spread.filter((s) => ids.includes(s.id));
  if (spread.length === 0) return "";
  const disagree = spread.filter((s) => (s.min < 1) !== (s.max < 1) && s.min !== s.max);
  const dev = Math.max(...spread.map((s) => s.maxDeviation)) * 100;
  if (disagree.length === 0) return `; ${n} runs agreed (within ±${dev.toFixed(1)} %)`;
  const s = disagree[0];
  return `; ${n} runs disagreed (${s.label} went from ${formatMultiple(s.min)} to ${
    formatMultiple(s.max)
  })`;
}

/** The opening sentences of the report, one or two; empty when the run compares nothing. */
export function answerLines(run: BenchRun): string[] {
  const rows = run.rows.filter((r) => r.step === undefined && r.scenario !== "peers");
  const s = run.config.scenario;
  if (s === "peers") return peersAnswer(run);
  if (s === "concurrency" || s === "capacity") return rateAnswer(run, rows);
  if (s === "cold") return coldAnswer(run, rows);
  return [...latencyAnswer(run, rows), ...stacksAloneLines(run)];
}

/**
 * sbilab's own ratio of two transports at a size: the run's paired ratio when
 * it has one, else paired over the rows' rounds here, else the rows' medians.
 */
function ownRatio(run: BenchRun, n: string, d: string, size: number): AnswerRatio | undefined {
  const row = (t: string) =>
    run.rows.find((r) =>
      r.scenario === "rtt" && r.step === undefined && r.transport === t && r.sizeBytes === size
    );
  const num = row(n), den = row(d);
  if (!num || !den) return undefined;
  const paired =
    run.rounds?.ratios.find((r) =>
      r.kind === "transports" && r.numerator === num.id && r.denominator === den.id
    ) ?? ratioRecord(num, den, { id: "", label: "", kind: "transports" });
  const base = { numerator: n, denominator: d };
  if (paired) return { ...base, ratio: paired.ratio, interval: paired.interval };
  return rowRatio(run, num, den);
}

/**
 * The stacks alone beside sbilab, for a run that measured them: their h3 ÷
 * h2-TLS (else h3 ÷ h2c) per size with its interval, sbilab's own ratio of
 * the same pair (and its h3 ÷ h2-TLS when the pair is another), then the time
 * sbilab adds per request of each transport. Empty for a run without them.
 */
export function stacksAloneLines(run: BenchRun): string[] {
  const ratios = (run.rounds?.ratios ?? []).filter((r) => r.kind === "stacks");
  const out: string[] = [];
  const clauses: string[] = [];
  for (const size of [...new Set(ratios.map((r) => r.sizeBytes))]) {
    const at = ratios.filter((r) => r.sizeBytes === size);
    const r = at.find((q) => q.label === "stacks alone h3 ÷ h2-tls") ??
      at.find((q) => q.label === "stacks alone h3 ÷ h2c");
    if (!r || size === undefined) continue;
    const [n, d] = r.label.replace("stacks alone ", "").split(" ÷ ");
    const own = [ownRatio(run, n, d, size)];
    if (d !== "h2-tls") own.push(ownRatio(run, "h3", "h2-tls", size));
    const sbilab = own.filter((x) => x !== undefined).map((x) =>
      `${transportName(x.numerator)} ÷ ${transportName(x.denominator)} ${withInterval(x)}`
    );
    clauses.push(
      `${transportName(n)} ÷ ${transportName(d)} = ${
        withInterval({ ...r, numerator: n, denominator: d })
      } per ${formatBytes(size)} request${sbilab.length ? ` (sbilab: ${sbilab.join(", ")})` : ""}`,
    );
  }
  if (clauses.length) {
    out.push(`The stacks alone (C, no runtime): ${clauses.join("; ")}.`);
  }
  const added = run.rounds?.added ?? [];
  const bySize = [...new Set(added.map((a) => a.sizeBytes))].map((size) => {
    const parts = added.filter((a) => a.sizeBytes === size).map((a) =>
      `${formatDurationWithInterval(a.addedNs, a.interval.lower, a.interval.upper)} per ${
        transportName(a.transport)
      } request`
    );
    return `${parts.join(", ")}${size !== undefined ? ` at ${formatBytes(size)}` : ""}`;
  });
  if (bySize.length) {
    out.push(
      `sbilab's own time over the stacks alone (its row's median − theirs, paired by round): ${
        bySize.join("; ")
      }.`,
    );
  }
  return out;
}

/**
 * The peers scenario's answer: our servers' rates against the C servers' and
 * our client's time against h2load's, at 1 stream and at 64, from its
 * paired ratios.
 */
function peersAnswer(run: BenchRun): string[] {
  const ratios = (run.rounds?.ratios ?? []).filter((r) => r.kind === "peers");
  const at = (what: string, shape: string) => ratios.find((r) => r.label === `${what}, ${shape}`);
  const both = (what: string) =>
    [["1 stream", "at 1 stream"], ["64 streams", "at 64"]].flatMap(([shape, words]) => {
      const r = at(what, shape);
      return r ? [`${withInterval(r)} ${words}`] : [];
    }).join(" and ");
  const out: string[] = [];
  const h2 = both(PEER_RATIOS.h2Server), h3 = both(PEER_RATIOS.h3Server);
  if (h2) out.push(`our h2c server served ${h2} nghttpd's requests per second`);
  if (h3) out.push(`our h3 server ${h3} gtlsserver's`);
  const servers = out.length ? `${out.join("; ")} (higher is better)` : "";
  const client = at(PEER_RATIOS.h2Client, "1 stream");
  const line = [
    servers,
    client
      ? `our SBI client took ${
        withInterval(client)
      } h2load's time per request at 1 stream (lower is better)`
      : "",
  ].filter((x) => x).join("; ");
  if (!line) return [];
  const noise = run.rounds?.noise.noisy ? " The machine was noisy during the run (see below)." : "";
  return [`${line[0].toUpperCase()}${line.slice(1)}.${noise}`];
}

function latencyAnswer(run: BenchRun, rows: ResultRow[]): string[] {
  const clauses: string[] = [];
  const ids: string[] = [];
  const vague: string[] = [];
  let pair: [string, string] | undefined;
  for (const cell of cellsOf(rows)) {
    const p = pickPair(cell);
    if (!p) continue;
    if (pair && (p[0].transport !== pair[0] || p[1].transport !== pair[1])) continue;
    pair = [p[0].transport, p[1].transport];
    const r = rowRatio(run, p[0], p[1]);
    ids.push(`${r.numerator}/${r.denominator}/${p[0].sizeBytes}`);
    const what = p[0].scenario === "rtt"
      ? `per ${sizeWords(p[0])}request`
      : p[0].scenario === "flows"
      ? `per ${p[0].flow} flow${p[0].link ? ` on ${p[0].link}` : ""}${
        p[0].concurrency ? ` at ${p[0].concurrency} UEs` : ""
      }`
      : `for ${p[0].label}`;
    clauses.push(`${withInterval(r)} ${what}`);
    if (r.interval && r.interval.lower <= 1 && r.interval.upper >= 1) vague.push(what);
    if (clauses.length === 2) break;
  }
  if (!pair) return [];
  const [n, d] = pair.map(transportName);
  const noise =
    (vague.length === 0
      ? ""
      : clauses.length > 1 && vague.length === clauses.length
      ? " Both intervals hold 1: this run cannot tell the two apart."
      : ` The interval ${vague[0]} holds 1: there this run cannot tell the two apart.`) +
    (run.rounds?.noise.noisy ? " The machine was noisy during the run (see below)." : "");
  return [
    `${n} took ${clauses.join(" and ")} as long as ${d} (lower is better)${
      runsClause(run, ids)
    }.${noise}`,
  ];
}

function rateAnswer(run: BenchRun, rows: ResultRow[]): string[] {
  const rated = rows.filter((r) => r.requestsPerSecond !== undefined && r.requestsPerSecond > 0);
  const cells = cellsOf(rated).map((c) => ({ c, p: pickPair(c) })).filter((x) => x.p);
  if (cells.length === 0) return [];
  // The most loaded cell states the answer; the least loaded, when different, follows.
  const load = (x: { p?: [ResultRow, ResultRow] }) => x.p![0].concurrency ?? 0;
  const chosen = [cells.reduce((a, b) => (load(b) > load(a) ? b : a))];
  const least = cells.reduce((a, b) => (load(b) < load(a) ? b : a));
  if (load(least) !== load(chosen[0])) chosen.push(least);
  return chosen.map(({ p }) => {
    const [num, den] = p!;
    const rate = num.requestsPerSecond! / den.requestsPerSecond!;
    const [n, d] = [transportName(num.transport), transportName(den.transport)];
    if (num.scenario === "capacity") {
      return `${n} sustained ${formatMultiple(rate)} the request rate of ${d} with p99 ≤ ${
        run.config.p99BoundMs ?? "the bound"
      } ms, ${sizeWords(num)}GET (${formatRate(num.requestsPerSecond!)} against ${
        formatRate(den.requestsPerSecond!)
      }; higher is better; one search per transport, so no interval).`;
    }
    const lat = rowRatio(run, num, den);
    return `At ${num.concurrency} in flight, ${n} served ${
      formatMultiple(rate)
    } the requests per second of ${d} per ${sizeWords(num)}GET (${
      formatRate(num.requestsPerSecond!)
    } against ${formatRate(den.requestsPerSecond!)}; higher is better); its median latency was ${
      withInterval(lat)
    } as long (lower is better)${
      (rate < 1) === (lat.ratio < 1) && Math.abs(rate - 1) > 0.05 && Math.abs(lat.ratio - 1) > 0.05
        ? "; rate and latency disagree, see the warnings"
        : ""
    }.`;
  });
}

function coldAnswer(run: BenchRun, rows: ResultRow[]): string[] {
  const total = rows.filter((r) => /\/total$/.test(r.id));
  const out: string[] = [];
  for (const cell of cellsOf(total)) {
    const p = pickPair(cell);
    if (!p) continue;
    const r = rowRatio(run, p[0], p[1]);
    out.push(
      `${transportName(p[0].transport)} took ${withInterval(r)} as long as ${
        transportName(p[1].transport)
      } to set up a connection and receive the first response (${p[0].label}; ${
        formatDuration(p[0].estimate.median)
      } against ${formatDuration(p[1].estimate.median)}; lower is better).`,
    );
    if (out.length === 2) break;
  }
  if (out.length) return out;
  // Native-engine set-up rows (many connections at once): compare the rates.
  const rated = rows.filter((r) => r.requestsPerSecond !== undefined);
  for (const cell of cellsOf(rated)) {
    const p = pickPair(cell);
    if (!p) continue;
    const r = rowRatio(run, p[0], p[1]);
    out.push(
      `${transportName(p[0].transport)} took ${withInterval(r)} as long as ${
        transportName(p[1].transport)
      } for ${p[0].label} (lower is better).`,
    );
    break;
  }
  return out;
}

/** The legend of the terminal row table, one line per column group. */
export function legendLines(run: BenchRun): string[] {
  const out = [
    "median [95 % CI]: median time of one sample and its 95 % interval" +
    (run.rounds ? " over rounds" : " (bootstrap over samples)") +
    "; p99 likewise; lower is better.",
  ];
  if (run.floors.rows.some((f) => f.source === "stacks")) {
    out.push(
      "stacks alone: the native load engine (in this process) → sbilab's module of the same transport in a plain C host on the peer CPU, one request at a time on a warm connection, timed per request by the engine: the transports without sbilab's runtime around them.",
    );
  }
  if (run.rows.some((r) => r.floor)) {
    out.push(
      "× own floor: median over the kernel ping-pong of the row's own protocol and size (TCP for h2c and h2-TLS, UDP for h3), what the transport adds on top of its socket; × TCP floor: over the kernel TCP ping-pong of the same size, one reference for every row, so it compares across transports.",
    );
  }
  out.push(
    "rate: completed requests (or bits) per second over the sampling; n: samples; outl. m/s: Tukey outliers among the samples, mild (beyond 1.5 IQR of the quartiles) / severe (beyond 3 IQR); fail/err: responses whose status is outside the accepted set (--ok, default 2xx and 3xx) / requests without a response (err alone in runs saved before statuses were counted).",
  );
  return out;
}

/** The row's median over the kernel TCP floor of its size (one reference for every transport). */
export function tcpFloorMultiple(run: BenchRun, row: ResultRow): number | undefined {
  if (!row.floor) return undefined;
  const f = findFloor(run.floors.rows, "tcp", row.sizeBytes);
  return f ? row.estimate.median / f.estimate.median : undefined;
}

const rowWords = (r: ResultRow) =>
  `${transportName(r.transport)}${r.stack ? ` (${r.stack})` : ""} ${
    (r.scenario === "rtt" || r.scenario === "concurrency") && r.sizeBytes !== undefined
      ? formatBytes(r.sizeBytes)
      : r.label
  }${
    r.scenario === "concurrency" && r.concurrency && r.concurrency > 1
      ? ` at ${r.concurrency} in flight`
      : ""
  }`;

/** Fewer samples than this make a p99 or an outlier share too loose to warn about. */
const MIN_TAIL_SAMPLES = 100;

/** A row warns of its tail when its mean is at least this multiple of its median. */
const TAIL_MEAN_OVER_MEDIAN = 2;

/** At most this many warnings are listed; the rest are counted. */
const MAX_WARNINGS = 8;

function severeShare(r: ResultRow): number {
  const o = r.estimate.outliers;
  return r.estimate.n ? (o.lowSevere + o.highSevere) / r.estimate.n : 0;
}

/** The cause a tail-heavy row's figures show, as a clause. */
function tailCause(r: ResultRow): string {
  const e = r.estimate;
  const sev = e.outliers.lowSevere + e.outliers.highSevere;
  return `p99 ${formatDuration(e.p99)} is ${formatMultiple(e.p99 / e.median)} the median, mean ${
    formatDuration(e.mean)
  } is ${formatMultiple(e.mean / e.median)} it, ${sev} severe outliers (${
    (severeShare(r) * 100).toFixed(1)
  } % of ${e.n})`;
}

/** Options of {@linkcode warningLines}. */
export interface WarningOptions {
  /** List every warning instead of the first few and a count. Default false. */
  all?: boolean;
}

/** Rows whose figures contradict each other, one warning each, naming the cause. */
export function warningLines(run: BenchRun, options: WarningOptions = {}): string[] {
  const out: string[] = [];
  const rows = run.rows.filter((r) => r.step === undefined && r.estimate.n > 0);
  for (const r of rows) {
    const e = r.estimate;
    if (!(e.median > 0)) continue;
    const inFlight = r.concurrency ?? 1;
    const closedLoop = r.scenario === "rtt" || r.scenario === "concurrency";
    const implied = inFlight / (e.median / 1e9);
    if (closedLoop && r.requestsPerSecond !== undefined && r.requestsPerSecond < implied / 2) {
      const tail = e.mean > 1.5 * e.median;
      out.push(
        `${rowWords(r)}: the median ${formatDuration(e.median)} implies about ${
          formatRate(implied)
        } at ${inFlight} in flight, but the row ran ${formatRate(r.requestsPerSecond)}: ${
          tail
            ? `a tail carries the time (${tailCause(r)})`
            : inFlight > 1
            ? `by Little's law (rate × mean latency ${formatDuration(e.mean)}) only about ${
              Math.round(r.requestsPerSecond * e.mean / 1e9)
            } requests were in flight, not ${inFlight}: something held the rest back (a stream limit, the engine or the client)`
            : `the time went between requests, outside what a sample times (mean ${
              formatDuration(e.mean)
            } is close to the median)`
        }.`,
      );
      continue;
    }
    // The rule kept: warn when the tail carries the time, i.e. the mean is at least twice the
    // median (the slow requests then cost as much in all as the typical ones, and a rate or a
    // capacity planned from the median is off by half). Severe Tukey outliers above 5 % and a
    // p99 above 20× the median, the old triggers, are what latency on a shared VM looks like
    // (a scheduler tick, a GC pause): they fired on nearly every row and said nothing.
    if (e.n >= MIN_TAIL_SAMPLES && e.mean >= TAIL_MEAN_OVER_MEDIAN * e.median) {
      out.push(
        `${rowWords(r)}: the tail carries the time (${tailCause(r)}); the median describes ` +
          "most requests, not what they cost in all.",
      );
    }
  }
  // A larger body that costs less than a smaller one on the same transport and stack.
  const sized = rows.filter((r) => r.sizeBytes !== undefined && r.scenario === "rtt");
  for (const big of sized) {
    for (const small of sized) {
      if (
        small === big || small.transport !== big.transport || small.stack !== big.stack ||
        small.link !== big.link || small.sizeBytes! >= big.sizeBytes!
      ) continue;
      if (big.estimate.medianCi.upper >= small.estimate.medianCi.lower) continue;
      const cvS = small.rounds?.cv, cvB = big.rounds?.cv;
      const cause = cvS !== undefined && cvB !== undefined && cvS > 1.5 * cvB
        ? `the ${formatBytes(small.sizeBytes!)} row's rounds varied more (CV ${
          (cvS * 100).toFixed(1)
        } % against ${(cvB * 100).toFixed(1)} %): machine noise landed on it`
        : severeShare(small) > severeShare(big) + 0.01
        ? `the ${formatBytes(small.sizeBytes!)} row has more severe outliers (${
          (severeShare(small) * 100).toFixed(1)
        } % against ${(severeShare(big) * 100).toFixed(1)} %)`
        : run.rounds
        ? "both rows ran in the same rounds, so the cost is in the transport's handling of small bodies (e.g. a delayed acknowledgement or a coalescing timer), not in the machine"
        : "the rows ran one after the other, so a change of machine state between them can explain it; run in rounds to tell";
      out.push(
        `${transportName(big.transport)} ${formatBytes(big.sizeBytes!)} (${
          formatDuration(big.estimate.median)
        }) ran faster than ${formatBytes(small.sizeBytes!)} (${
          formatDuration(small.estimate.median)
        }), beyond both intervals: ${cause}.`,
      );
    }
  }
  if (options.all || out.length <= MAX_WARNINGS) return out;
  return [
    ...out.slice(0, MAX_WARNINGS),
    `… and ${out.length - MAX_WARNINGS} more rows like these (all in the Markdown report).`,
  ];
}
