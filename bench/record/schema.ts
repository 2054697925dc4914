/**
 * The saved benchmark run: one versioned, serialisable record. Every report,
 * chart and comparison is a pure function of it, so a run saved with
 * `--json` can be re-rendered or compared later with `lab report`.
 * Durations are nanoseconds; sizes are bytes.
 */
import type { Estimate } from "../stats/stats.ts";
import type { ConnectionInfo, StackName } from "../../transports/types.ts";
import type { SampleSet } from "../stats/recorder.ts";
import type { RepeatsRecord, RoundSeries, RoundsRecord } from "./rounds_record.ts";

/**
 * Schema identifier written into every run. Bump on any incompatible change.
 * Compatible additions since the first runs were saved (all optional, so
 * older files still read): the `hol` and `migration` scenarios,
 * `RunConfig.streams`, `RunConfig.link` and `ResultRow.extra` figures; the
 * `flows` scenario with `RunConfig.flows`, `ResultRow.flow` / `step` / `link`
 * / `stack`, and `BenchRun.study` for runs made by `lab study`.
 * the `capacity`
 * scenario, `RunConfig.engine`, `RunConfig.p99BoundMs` and `ResultRow.engine`.
 * and the
 * stack: `RunConfig.stack`, `ResultRow.stack` and `BenchRun.connections`
 * (a file without them ran h2 on the deno stack's server).
 *
 * Version 2: runs measured in interleaved rounds. `BenchRun.rounds` holds the
 * schedule, the machine's noise and the paired ratios; rows and floors carry
 * `rounds` (per-round counts and medians, their samples stored in round
 * order) and their `estimate.medianCi` is the cluster interval over rounds.
 * `RunConfig.schedule`, `rounds`, `blockMs`, `seed` and `BenchRun.repeats`
 * are new. Version 1 files still read (they have no rounds). Compatible
 * additions since: floors of source `stacks` (the stacks alone) with
 * `RoundsRecord.added`, and ratios of kind `stacks`.
 */
export const SCHEMA_VERSION = "sbilab-bench/2";

/** Schemas {@linkcode parseRun} reads. */
export const READABLE_SCHEMAS: readonly string[] = ["sbilab-bench/1", SCHEMA_VERSION];

/** The request a run's rows sent against a target (the body's bytes are not kept). */
export interface RequestRecord {
  method: string;
  /** Path and query. */
  path: string;
  /** Extra headers as given with `-H`. */
  headers?: Record<string, string>;
  /** Body length in bytes, when there was one. */
  bodyBytes?: number;
}

/** Scenario names. */
export type ScenarioName =
  | "rtt"
  | "concurrency"
  | "cold"
  | "bulk"
  | "rate"
  | "peers"
  | "hol"
  | "migration"
  | "flows"
  | "capacity";

/** Every scenario, in help order. */
export const SCENARIOS: readonly ScenarioName[] = [
  "rtt",
  "concurrency",
  "cold",
  "bulk",
  "rate",
  "peers",
  "hol",
  "migration",
  "flows",
  "capacity",
];

/** What sent a row's requests: the native load engine inside the transport's C module, the
 * full SBI client (the study's per-request path), or an outside tool (`peer`, e.g. h2load). */
export type EngineName = "native" | "sbi" | "peer";

/** One direction of an emulated link as configured (see `linkemu/link_spec.ts`). */
export interface LinkDirectionRecord {
  /** One-way delay (ms). */
  delayMs: number;
  /** Jitter (± ms). */
  jitterMs: number;
  /** Long-run loss share, 0…1. */
  loss: number;
  /** Longest loss burst (packets). */
  burst: number;
  /** Rate limit (bit/s), 0 = none. */
  rateBps: number;
  /** Drop-tail queue (packets). */
  queue: number;
  /** Reordered share, 0…1. */
  reorder: number;
  /** Duplicated share, 0…1. */
  dup: number;
}

/** Packet counters of one direction of the relay over the whole run. */
export interface LinkCountersRecord {
  /** Packets that entered the link. */
  in: number;
  /** Packets that left it (duplicates included). */
  out: number;
  /** Packets dropped by loss, a full queue or a blackhole window. */
  dropLoss: number;
  dropQueue: number;
  dropBlackhole: number;
}

/** The emulated link a run crossed (`lab bench --link`). */
export interface LinkRecord {
  /** The spec as given (`lossy`, `rtt=50ms,loss=1%`). */
  spec: string;
  /** The spec with every value spelled out. */
  resolved: string;
  /** `relay` (TUN relay), `netem`, or `veth` (a plain veth pair). */
  backend: "relay" | "netem" | "veth";
  /** MTU of both ends, when set (`--mtu`). */
  mtu?: number;
  /** Configured round-trip delay (ms). */
  rttMs: number;
  /** Client → server and server → client. */
  up: LinkDirectionRecord;
  down: LinkDirectionRecord;
  /** Blackhole windows, when configured. */
  blackhole?: { onMs: number; offMs: number };
  /** The relay's counters at the end of the run (relay backend only). */
  counters?: { up: LinkCountersRecord; down: LinkCountersRecord };
}

/** Which floor a row is compared with. */
export type FloorKind = "tcp" | "udp";

/** What a floor measures (see {@linkcode FloorRow.source}). */
export type FloorSource = "kernel" | "runtime" | "bare" | "stacks";

/** One floor measurement (ping-pong of the row's payload size between two processes). */
export interface FloorRow {
  /**
   * `kernel` (the project's C ping-pong), `runtime` (Deno sockets), `bare`
   * (the deno stack's runtime with nothing of sbilab's on top: `fetch` →
   * Deno's `serve`, or a request on a Deno QUIC stream) for one transport, or
   * `stacks` (the stacks alone: the native load engine against sbilab's
   * module of that transport hosted by a plain C loop, no runtime on either
   * side; the row's GET of the same size, timed per request by the engine).
   */
  source: FloorSource;
  /** Transport protocol. */
  protocol: FloorKind;
  /** `bare` and `stacks`: the transport whose rows it stands under (`h2c`, `h2-tls`, `h3`). */
  transport?: string;
  /** Bytes each way per round trip. */
  sizeBytes: number;
  /** Round-trip time estimate (ns). */
  estimate: Estimate;
  /** Raw samples or histogram. */
  samples: SampleSet;
  /** Per-round layout, when the floor was measured in interleaved rounds. */
  rounds?: RoundSeries;
}

export type {
  AddedRecord,
  NoiseRecord,
  NoiseThresholds,
  RatioRecord,
  RepeatsRecord,
  RoundMachineRecord,
  RoundSeries,
  RoundsRecord,
} from "./rounds_record.ts";

/** One measured row. */
export interface ResultRow {
  /** Stable key used to match rows between runs, e.g. `rtt/h2c/256`. */
  id: string;
  /** Scenario that produced the row. */
  scenario: ScenarioName;
  /** Transport or peer measured (`h2c`, `h2-tls`, `h3`, `h2load`, …). */
  transport: string;
  /** What sent the requests (absent in runs saved before engines were named: `sbi`). */
  engine?: EngineName;
  /** What one sample times, in words (e.g. `GET 256 B, warm connection`). */
  label: string;
  /** Body size in bytes the row moves per request, when meaningful. */
  sizeBytes?: number;
  /** Requests in flight, when meaningful. */
  concurrency?: number;
  /** Floor the row is compared with, when it is a round-trip latency. */
  floor?: FloorKind;
  /** Duration estimate of one sample (ns). */
  estimate: Estimate;
  /** Raw samples or histogram (ns). */
  samples: SampleSet;
  /** Completed requests per second over the sampling window, when measured. */
  requestsPerSecond?: number;
  /** Bytes per second moved (goodput), when measured. */
  bytesPerSecond?: number;
  /** Requests that failed (timeouts, errors) during sampling. */
  errors: number;
  /** Responses by status (`{"200": 5012}`), when counted. */
  status?: Record<string, number>;
  /** Responses whose status was outside the run's accepted set (`RunConfig.ok`), when counted. */
  failed?: number;
  /** Extra named figures (e.g. `uncorrectedMedian`), all numbers. */
  extra?: Record<string, number>;
  /** `flows`: the call flow the row times (`registration`, `warm-get`, …). */
  flow?: string;
  /** `flows`: the step the row times, when it is a per-step row. */
  step?: string;
  /** The emulated link the row crossed (its spec), in runs that cross several. */
  link?: string;
  /** Implementation family the row ran on (see `StackName`; absent: a run saved before stacks). */
  stack?: StackName;
  /** Per-round layout, when the row was measured in interleaved rounds. */
  rounds?: RoundSeries;
}

/** Environment of the run. */
export interface Environment {
  cpuModel: string;
  cores: number;
  kernel: string;
  os: string;
  hostname: string;
  deno: string;
  v8: string;
  typescript: string;
  /** npm library versions in use (name → version). */
  libraries: Record<string, string>;
  /** `git rev-parse HEAD` plus `-dirty` when the tree has changes, or `unknown`. */
  gitRevision: string;
}

/** The configuration the run used (after defaults). */
export interface RunConfig {
  scenario: ScenarioName;
  /** Implementation family of servers and clients. */
  stack?: StackName;
  transports: string[];
  sizes: number[];
  warmupMs: number;
  sampleMs: number;
  /** Fixed number of samples per row, when given. */
  samples?: number;
  quick: boolean;
  /** `process` (server in its own process), `in-process`, `target`, or `link` (server in
   * the server namespace of an emulated link, client in the client namespace). */
  serverMode: "process" | "in-process" | "target" | "link";
  /** Target URL when `serverMode` is `target`. */
  target?: string;
  /** The request every row sent (`--path`, `-X`, `-H`, `-d`), when not the payload GET. */
  request?: RequestRecord;
  /** The statuses that counted as a success (`2xx,3xx`); absent in runs saved before. */
  ok?: string;
  delayMs: number;
  /** Open-loop rate for `rate` (req/s). */
  rate?: number;
  /** Concurrency levels for `concurrency`. */
  concurrency?: number[];
  /** Concurrent streams on one connection for `hol`. */
  streams?: number;
  /** The emulated link the run crossed, when it ran with `--link`. */
  link?: LinkRecord;
  /** `flows`: the streams measured (`journey`, `warm-get`). */
  flows?: string[];
  /** What sent the requests of the scenario's rows. */
  engine?: EngineName;
  /** p99 bound of the `capacity` scenario (ms). */
  p99BoundMs?: number;
  /** `interleaved` (rounds) or `sequential` (one row after another); absent: sequential. */
  schedule?: Schedule;
  /** Interleaved: measured rounds, block per arm (ms) and the seed of the orders. */
  rounds?: number;
  blockMs?: number;
  seed?: number;
}

/** How arms share the run's time. */
export type Schedule = "interleaved" | "sequential";

/** What `lab study` adds to its run: the links crossed, the budget and the verdict rule. */
export interface StudyRecord {
  /** Every link crossed, in report order (counters included). */
  links: LinkRecord[];
  /** The stack families that each ran the whole matrix, when more than one. */
  stacks?: StackName[];
  /** The time budget (ms) and whether the run kept it. */
  budgetMs: number;
  /** Wall time the matrix took (ms). */
  elapsedMs: number;
  /** Average time a cell of the last link was given (ms). */
  sampleMs: number;
  /** Most flows per side a cell takes (the last look). */
  samples: number;
  /** The verdict rule's parameters. */
  rule: {
    minReduction: number;
    level: number;
    resamples: number;
    minSamples: number;
    maxCoreShare?: number;
    minOnTimeShare?: number;
    onTimeMs?: number;
    /** Flows per side at which a cell is judged (the sequential design's looks). */
    looks?: number[];
    /** Flows per cluster by which the sides' burstiness is measured; absent: flows taken as independent. */
    clusterFlows?: number;
    /** The p99 reduction a powered last look would have called material; absent: no power rule. */
    powerReduction?: number;
    /** Chance that powered look calls it material. */
    power?: number;
    /** A cell whose time ran out between two looks took the next look on its flows; absent: it did not. */
    endLook?: boolean;
    /** Flows per side from which a look could decide by the power; absent: the last look only. */
    powerFrom?: number;
    /** Streams whose looks (and `powerFrom`) were that many times the journey's; absent: 1. */
    lookFactors?: Record<string, number>;
  };
}

/** A complete benchmark run. */
export interface BenchRun {
  /** {@linkcode SCHEMA_VERSION} when written by this lab; an older readable one when loaded. */
  schema: string;
  /** ISO time the run started. */
  startedAt: string;
  /** Wall time of the whole run in ms. */
  durationMs: number;
  config: RunConfig;
  environment: Environment;
  /** Floors measured in the same run, or why they were skipped. */
  floors: { rows: FloorRow[]; skipped?: string };
  rows: ResultRow[];
  /** What each transport's connection ran on: libraries, TLS suite and group, packet sizes. */
  connections?: Partial<Record<string, ConnectionInfo>>;
  /** Things the reader must know (skips, caveats), one sentence each. */
  notes: string[];
  /** Present when the run is a `lab study` matrix. */
  study?: StudyRecord;
  /** Present when the run was measured in interleaved rounds. */
  rounds?: RoundsRecord;
  /** Present when the run was repeated (`--runs N`); the record is the last run's. */
  repeats?: RepeatsRecord;
}

/** Parses and checks a saved run; throws `SyntaxError` with a one-line message. */
export function parseRun(text: string, source = "input"): BenchRun {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new SyntaxError(`${source} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof data !== "object" || data === null) {
    throw new SyntaxError(`${source} is not a benchmark run (expected a JSON object)`);
  }
  const run = data as Partial<BenchRun>;
  if (!READABLE_SCHEMAS.includes(run.schema as string)) {
    throw new SyntaxError(
      `${source} has schema ${
        JSON.stringify(run.schema ?? null)
      }, this lab reads ${SCHEMA_VERSION}`,
    );
  }
  if (!Array.isArray(run.rows) || !run.config || !run.environment || !run.floors) {
    throw new SyntaxError(`${source} is missing rows, config, environment or floors`);
  }
  for (const [i, row] of run.rows.entries()) {
    if (typeof row?.id !== "string" || typeof row?.estimate?.median !== "number") {
      throw new SyntaxError(`${source} row ${i} has no id or median`);
    }
  }
  return run as BenchRun;
}

/** Whether a row is a flow-time row (not a step, not a heartbeat). */
export function isFlowRow(r: ResultRow): boolean {
  return r.scenario === "flows" && r.flow !== undefined && r.step === undefined;
}
