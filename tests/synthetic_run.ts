/**
 * Synthetic `rtt` runs in interleaved rounds, drawn from a known distribution:
 * two runs of "the same code" differ only by their seed, so whatever a
 * comparison of them reports beyond "no change" is the comparison's error.
 */
import { createRng, estimate } from "../bench/stats/stats.ts";
import { clusterMedian, cv, roundMedians } from "../bench/stats/rounds_stats.ts";
import { addedTimes, assessNoise, pairedRatios } from "../bench/record/rounds_summary.ts";
import {
  type BenchRun,
  type FloorRow,
  type ResultRow,
  type RoundSeries,
  SCHEMA_VERSION,
} from "../bench/record/schema.ts";

/** Options of {@linkcode syntheticRtt}. */
export interface SyntheticOptions {
  /** Scales every time in the run (a machine faster or slower today). Default 1. */
  machine?: number;
  /** h3's true cost over h2-TLS. Default 1.3. */
  h3Cost?: number;
  /** Measured rounds. Default 30. */
  rounds?: number;
  /** Samples per arm and round. Default 40. */
  perRound?: number;
  /**
   * Adds stacks-alone arms (see `rtt_stacks_arms.ts`) of the transports given,
   * with these base times at 256 B (ns). Default none.
   */
  stacks?: Partial<Record<"h2c" | "h2-tls" | "h3", number>>;
}

/** Base round trip (ns) of each arm at 256 B; 16 KiB costs 1.4× that. */
const BASE: Record<string, number> = {
  "kernel tcp": 30_000,
  "kernel udp": 28_000,
  h2c: 70_000,
  "h2-tls": 77_000,
};

/** A run of h2c, h2-TLS and h3 at 256 B and 16 KiB with kernel floors, from `seed`. */
export function syntheticRtt(seed: number, options: SyntheticOptions = {}): BenchRun {
  const machine = options.machine ?? 1;
  const h3Cost = options.h3Cost ?? 1.3;
  const rounds = options.rounds ?? 30;
  const perRound = options.perRound ?? 40;
  const rng = createRng(seed);
  const z = () => Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
  const base: Record<string, number> = { ...BASE, h3: BASE["h2-tls"] * h3Cost };
  const stacks = Object.entries(options.stacks ?? {});
  for (const [t, ns] of stacks) base[`stacks ${t}`] = ns;
  const sizes = [256, 16384];
  const arms = Object.keys(base).flatMap((a) => sizes.map((s) => ({ a, s })));
  const blocks = new Map<string, number[][]>(arms.map(({ a, s }) => [`${a}/${s}`, []]));
  for (let i = 0; i < rounds; i++) {
    const shared = Math.exp(0.05 * z());
    for (const { a, s } of arms) {
      const own = Math.exp(0.02 * z());
      const mean = base[a] * (s === 256 ? 1 : 1.4) * machine * shared * own;
      blocks.get(`${a}/${s}`)!.push(
        Array.from({ length: perRound }, () => mean * Math.exp(0.15 * z())),
      );
    }
  }
  const layout = (b: number[][]) => {
    const flat = b.flat();
    const medians = roundMedians(b);
    const e = estimate(flat, { resamples: 10 });
    e.medianCi = clusterMedian(b, { resamples: 300 }).interval;
    const series: RoundSeries = { counts: b.map((r) => r.length), medians, cv: cv(medians) };
    return {
      estimate: e,
      samples: { count: flat.length, complete: true, samples: flat, histogram: "" },
      rounds: series,
    };
  };
  const floors: FloorRow[] = ["tcp", "udp"].flatMap((p) =>
    sizes.map((s) => ({
      source: "kernel" as const,
      protocol: p as "tcp" | "udp",
      sizeBytes: s,
      ...layout(blocks.get(`kernel ${p}/${s}`)!),
    }))
  );
  for (const [t] of stacks) {
    for (const s of sizes) {
      floors.push({
        source: "stacks",
        protocol: t === "h3" ? "udp" : "tcp",
        transport: t,
        sizeBytes: s,
        ...layout(blocks.get(`stacks ${t}/${s}`)!),
      });
    }
  }
  const rows: ResultRow[] = ["h2c", "h2-tls", "h3"].flatMap((t) =>
    sizes.map((s) => ({
      id: `native/rtt/${t}/${s}`,
      scenario: "rtt" as const,
      transport: t,
      label: `GET ${s === 256 ? "256 B" : "16 KiB"}, warm connection`,
      sizeBytes: s,
      floor: t === "h3" ? "udp" as const : "tcp" as const,
      stack: "native" as const,
      errors: 0,
      requestsPerSecond: 1e9 / base[t],
      ...layout(blocks.get(`${t}/${s}`)!),
    }))
  );
  const ratios = pairedRatios(rows, floors, { resamples: 300 });
  const added = addedTimes(rows, floors, { resamples: 300 });
  return {
    schema: SCHEMA_VERSION,
    startedAt: "2026-12-01T00:00:00Z",
    durationMs: 1,
    config: {
      scenario: "rtt",
      stack: "native",
      transports: ["h2c", "h2-tls", "h3"],
      sizes,
      warmupMs: 0,
      sampleMs: 0,
      quick: false,
      serverMode: "process",
      delayMs: 0,
      schedule: "interleaved",
    },
    environment: {
      cpuModel: "synthetic",
      cores: 2,
      kernel: "-",
      os: "-",
      hostname: "-",
      deno: "-",
      v8: "-",
      typescript: "-",
      libraries: {},
      gitRevision: "synthetic",
    },
    floors: { rows: floors },
    rows,
    notes: [],
    rounds: {
      rounds,
      blockMs: 30,
      warmupRounds: 0,
      seed,
      order: [],
      roundMs: Array(rounds).fill(100),
      machine: [],
      ratios,
      ...(added.length ? { added } : {}),
      noise: assessNoise({ machine: [], rows, floors, ratios, cores: 2 }),
    },
  };
}

/**
 * A `concurrency` run derived from {@linkcode syntheticRtt}: each transport at
 * 256 B with 1, 8 and 64 in flight, its rate by Little's law (h3 served at
 * `h3Cost` of h2-TLS's time), no rounds.
 */
export function syntheticConcurrency(seed: number, options: SyntheticOptions = {}): BenchRun {
  const run = syntheticRtt(seed, options);
  run.config.scenario = "concurrency";
  run.config.concurrency = [1, 8, 64];
  run.config.schedule = "sequential";
  run.rounds = undefined;
  run.floors = { rows: [], skipped: "floors are not measured for concurrency" };
  run.rows = run.rows.filter((r) => r.sizeBytes === 256).flatMap((r) =>
    [1, 8, 64].map((n) => {
      // Queueing: latency grows with the square root of what is in flight.
      const k = Math.sqrt(n);
      const samples = r.samples.samples.map((x) => x * k);
      const est = { ...r.estimate };
      for (const f of ["mean", "median", "p50", "p90", "p99", "p999", "min", "max"] as const) {
        est[f] = r.estimate[f] * k;
      }
      est.medianCi = {
        ...r.estimate.medianCi,
        lower: r.estimate.medianCi.lower * k,
        upper: r.estimate.medianCi.upper * k,
      };
      return {
        ...r,
        id: `concurrency/native/${r.transport}/256/${n}`,
        scenario: "concurrency" as const,
        label: `GET 256 B, ${n} in flight on one connection (native engine)`,
        concurrency: n,
        floor: undefined,
        rounds: undefined,
        estimate: est,
        samples: { ...r.samples, samples },
        requestsPerSecond: n / (est.mean / 1e9),
      };
    })
  );
  return run;
}

/** Adds CPU time per request to every row and a `--runs 3` record of slightly moved ratios. */
export function withCpuAndRepeats(run: BenchRun): BenchRun {
  for (const r of run.rows) {
    r.extra = {
      ...r.extra,
      clientCpuNsPerRequest: r.estimate.median * 0.3,
      serverCpuNsPerRequest: r.estimate.median * (r.transport === "h3" ? 0.35 : 0.25),
    };
  }
  const ratios = (run.rounds?.ratios ?? []).filter((r) => r.kind === "transports");
  const moved = (f: number) =>
    ratios.map((r) => ({
      ...r,
      ratio: r.ratio * f,
      interval: { ...r.interval, lower: r.interval.lower * f, upper: r.interval.upper * f },
    }));
  const runs = [0.97, 1.02, 1].map((f) => ({
    startedAt: run.startedAt,
    durationMs: 1,
    ratios: moved(f),
    noisy: false,
  }));
  run.repeats = {
    runs,
    spread: ratios.map((r) => ({
      id: r.id,
      label: r.label,
      mean: r.ratio * 0.9967,
      min: r.ratio * 0.97,
      max: r.ratio * 1.02,
      maxDeviation: 0.027,
    })),
  };
  return run;
}
