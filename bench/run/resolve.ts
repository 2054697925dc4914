/**
 * The runner's first step: checks the options and resolves them into what the
 * run does (scenario, schedule, sampling plan, stack, transports) and the
 * config the record will carry. Throws `RangeError` on a bad option.
 */
import type { StackName, TransportName } from "../../transports/types.ts";
import { resolveStack } from "../../transports/stack.ts";
import type { SamplingPlan } from "../measure/sampler.ts";
import { parseTargetList } from "../measure/servers.ts";
import { DEFAULT_BLOCK_MS, DEFAULT_ROUNDS } from "../measure/rounds.ts";
import type {
  EngineName,
  RequestRecord,
  RunConfig,
  ScenarioName,
  Schedule,
} from "../record/schema.ts";
import type { Scenario } from "../scenarios/context.ts";
import { rttScenario } from "../scenarios/rtt.ts";
import { concurrencyScenario } from "../scenarios/concurrency.ts";
import { coldScenario } from "../scenarios/cold.ts";
import { bulkScenario } from "../scenarios/bulk.ts";
import { rateScenario } from "../scenarios/rate.ts";
import { peerSchedule, peersScenario } from "../scenarios/peers.ts";
import { DEFAULT_STREAMS, holScenario } from "../scenarios/hol.ts";
import { migrationScenario } from "../scenarios/migration.ts";
import { capacityScenario, DEFAULT_P99_BOUND_MS } from "../scenarios/capacity.ts";
import type { BenchOptions } from "./options.ts";
import { DEFAULT_OK } from "../../lib/status_set.ts";

/** Scenarios that send a given request (`--path`, `-X`, `-H`, `-d`) instead of the payload GET. */
export const REQUEST_SCENARIOS: readonly ScenarioName[] = [
  "rtt",
  "concurrency",
  "rate",
  "capacity",
  "cold",
];

/** The run's sizes: the payload GET's, or one entry (the body's length) for a given request. */
function resolveSizes(scenario: ScenarioName, options: BenchOptions): number[] {
  if (!options.request) return options.sizes ?? DEFAULT_SIZES;
  if (!REQUEST_SCENARIOS.includes(scenario)) {
    throw new RangeError(
      `--scenario ${scenario} sends its own requests (a request is given for ${
        REQUEST_SCENARIOS.join(", ")
      })`,
    );
  }
  if (options.sizes) {
    throw new RangeError("--sizes sets the payload GET's sizes: it does not go with --path");
  }
  return [options.request.body?.length ?? 0];
}

/** Default body sizes. */
export const DEFAULT_SIZES = [256, 16 * 1024];

const SCENARIO_FUNCTIONS: Partial<Record<ScenarioName, Scenario>> = {
  rtt: rttScenario,
  concurrency: concurrencyScenario,
  cold: coldScenario,
  bulk: bulkScenario,
  rate: rateScenario,
  peers: peersScenario,
  hol: holScenario,
  migration: migrationScenario,
  capacity: capacityScenario,
};

/** Scenarios the native engine drives (its default there); the others use the SBI client. */
export const NATIVE_SCENARIOS: readonly ScenarioName[] = [
  "concurrency",
  "rate",
  "bulk",
  "capacity",
];

/** Scenarios that also run on the native engine when asked (`--engine native`). */
const NATIVE_OPTIONAL: readonly ScenarioName[] = ["hol", "cold"];

/** The engine a scenario uses: the one asked for, else its default; throws `RangeError` when unsupported. */
export function engineFor(scenario: ScenarioName, asked?: EngineName): "native" | "sbi" {
  const native = NATIVE_SCENARIOS.includes(scenario);
  const engine = asked ?? (native ? "native" : "sbi");
  if (engine === "native" && !native && !NATIVE_OPTIONAL.includes(scenario)) {
    throw new RangeError(`--scenario ${scenario} runs on the SBI client only (use --engine sbi)`);
  }
  if (engine === "sbi" && scenario === "capacity") {
    throw new RangeError("--scenario capacity needs the native engine");
  }
  if (engine !== "native" && engine !== "sbi") {
    throw new RangeError(`Unknown engine ${engine} (use native or sbi)`);
  }
  return engine;
}

/** How the arms of a run share it, and the interleaved rounds' shape. */
export interface RunSchedule {
  schedule: Schedule;
  /** `rtt` in interleaved rounds run by the runner (flows and peers run their own). */
  interleaved: boolean;
  rounds: number;
  blockMs: number;
  /** Blocks per arm and round when a sample count was asked. */
  blockCount?: number;
  seed: number;
}

/** A run with its options resolved: what {@linkcode runBench}'s later steps work from. */
export interface ResolvedRun extends RunSchedule {
  scenario: ScenarioName;
  runScenario: Scenario;
  quick: boolean;
  stack: StackName;
  sizes: number[];
  plan: SamplingPlan;
  /** The transports measured (a target's: those that answer, once probed). */
  transports: TransportName[];
  /** The transports whose servers start: the peers scenario's own, else `transports`. */
  serverTransports: TransportName[];
  config: RunConfig;
  /** Sentences for the report, in the order the run learns them. */
  notes: string[];
}

function positive(name: string, v: number | undefined, integer = false): void {
  if (v === undefined) return;
  if (!Number.isFinite(v) || v < 0 || (integer && !Number.isInteger(v))) {
    throw new RangeError(`${name} must be a ${integer ? "whole " : ""}number ≥ 0, got ${v}`);
  }
}

/** Checks the numeric options and the sizes; throws `RangeError` on the first bad one. */
function checkNumbers(options: BenchOptions): void {
  positive("warmup", options.warmupMs);
  positive("sample time", options.sampleMs);
  positive("samples", options.samples, true);
  positive("delay", options.delayMs);
  positive("streams", options.streams, true);
  if (options.streams !== undefined && options.streams < 1) {
    throw new RangeError("streams must be at least 1");
  }
  if (options.samples !== undefined && options.samples < 2) {
    throw new RangeError("samples must be at least 2");
  }
}

function checkLimits(options: BenchOptions, sizes: number[]): void {
  if (options.p99BoundMs !== undefined && !(options.p99BoundMs > 0)) {
    throw new RangeError(`p99 bound must be > 0 ms, got ${options.p99BoundMs}`);
  }
  if (options.rate !== undefined && !(options.rate > 0)) {
    throw new RangeError(`rate must be > 0, got ${options.rate}`);
  }
  for (const s of sizes) {
    if (!(Number.isInteger(s) && s >= 1 && s <= 16 * 1024 * 1024)) {
      throw new RangeError(`Size ${s} is outside 1 B … 16 MiB`);
    }
  }
}

/** The schedule of a scenario and, interleaved, its rounds and blocks. */
function resolveSchedule(
  scenario: ScenarioName,
  options: BenchOptions,
  quick: boolean,
): RunSchedule {
  // rtt interleaves through the round runner; flows interleaves its cells itself; peers
  // runs its own rounds of loaders × servers and knows no other schedule.
  const interleavable = scenario === "rtt" || scenario === "flows" || scenario === "peers";
  const schedule: Schedule = options.schedule ?? (interleavable ? "interleaved" : "sequential");
  if (schedule !== "interleaved" && schedule !== "sequential") {
    throw new RangeError(`Unknown schedule ${schedule} (use interleaved or sequential)`);
  }
  if (schedule === "interleaved" && !interleavable) {
    throw new RangeError(
      `--scenario ${scenario} runs sequentially only (interleaved: rtt, flows, peers)`,
    );
  }
  if (schedule === "sequential" && scenario === "peers") {
    throw new RangeError("--scenario peers runs in interleaved rounds only");
  }
  const interleaved = schedule === "interleaved" && scenario === "rtt";
  const rounds = options.rounds ?? (quick ? 10 : DEFAULT_ROUNDS);
  // Interleaved, `sampleMs` is an arm's sampling time over all rounds and `samples` its count.
  const blockMs = options.blockMs ??
    (options.sampleMs !== undefined
      ? Math.max(1, options.sampleMs / rounds)
      : quick
      ? 20
      : DEFAULT_BLOCK_MS);
  const blockCount = options.samples !== undefined
    ? Math.max(1, Math.ceil(options.samples / rounds))
    : undefined;
  if (!(Number.isInteger(rounds) && rounds >= 2)) {
    throw new RangeError(`rounds must be a whole number ≥ 2, got ${rounds}`);
  }
  if (interleaved && !(blockMs >= 1 && blockMs <= 10_000)) {
    throw new RangeError(`block must be 1 … 10000 ms, got ${blockMs}`);
  }
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 32);
  return { schedule, interleaved, rounds, blockMs, blockCount, seed };
}

/** Warm-up and sampling of one row (interleaved: of one arm over all rounds). */
function samplingPlan(
  scenario: ScenarioName,
  options: BenchOptions,
  s: RunSchedule,
  quick: boolean,
): SamplingPlan {
  const peers = peerSchedule(quick, options.rounds, options.blockMs);
  return scenario === "peers"
    // One discarded round, then a block per round.
    ? { warmupMs: peers.blockMs, sampleMs: peers.rounds * peers.blockMs }
    : s.interleaved
    ? {
      warmupMs: options.warmupMs ?? (quick ? 200 : 1000),
      sampleMs: s.rounds * s.blockMs,
      samples: s.blockCount !== undefined ? s.blockCount * s.rounds : undefined,
    }
    : {
      warmupMs: options.warmupMs ?? (quick ? 300 : 3000),
      sampleMs: options.samples !== undefined && options.sampleMs === undefined
        ? 60_000
        : options.sampleMs ?? (quick ? 700 : 5000),
      samples: options.samples,
    };
}

/** The transports to measure: the ones asked for, a target's, or every available one. */
function resolveTransports(options: BenchOptions, available: TransportName[]): TransportName[] {
  if (options.transports) return options.transports;
  if (options.target && parseTargetList(options.target)) {
    return (["h2c", "h2-tls", "h3"] as const).filter((t) => parseTargetList(options.target!)![t]);
  }
  if (options.target) {
    return (options.target.startsWith("https:") ? ["h2-tls", "h3"] : ["h2c"])
      .concat(options.targetH3 && !options.target.startsWith("https:") ? ["h3"] : [])
      .filter((t) => available.includes(t as TransportName)) as TransportName[];
  }
  return available;
}

/** Checks the options and resolves everything the run's later steps need. */
export async function resolveRun(options: BenchOptions): Promise<ResolvedRun> {
  const scenario = options.scenario ?? "rtt";
  const runScenario = SCENARIO_FUNCTIONS[scenario] ?? options.plugins?.[scenario]?.run;
  if (!runScenario) throw new RangeError(`Unknown scenario ${scenario}`);
  checkNumbers(options);
  const pluginConfig = options.plugins?.[scenario]?.configure(options) ?? {};
  const engine = engineFor(scenario, options.engine);
  const sizes = resolveSizes(scenario, options);
  checkLimits(options, options.request ? [] : sizes);
  const quick = options.quick ?? false;
  const schedule = resolveSchedule(scenario, options, quick);
  const plan = samplingPlan(scenario, options, schedule, quick);
  const stack = resolveStack(options.stack);
  const { availableTransports } = await import("../../transports/mod.ts");
  const available = await availableTransports(stack);
  const transports = resolveTransports(options, available);
  const notes: string[] = [];
  if (stack === "deno") {
    notes.push(
      "Stack deno: Deno.serve and fetch on hyper and rustls for h2, Deno's QUIC (quinn, rustls) with nghttp3 framing for h3 (the study's own pairing: what a Deno-based NF runs). Deno's QUIC shows no TLS parameters, tickets, datagram sizes or ECN counts.",
    );
  }
  if (!options.transports && stack === "native" && available.length < 3) {
    notes.push(await missingNativeNote(available));
  }
  // The peers scenario compares our h2c server with nghttpd and, on the native stack, our h3
  // server with gtlsserver.
  const peerTransports: TransportName[] = stack === "native" && available.includes("h3")
    ? ["h2c", "h3"]
    : ["h2c"];
  const serverTransports = scenario === "peers" ? peerTransports : transports;
  const config = runConfig(options, {
    scenario,
    stack,
    transports: serverTransports,
    sizes,
    plan,
    quick,
    engine,
    schedule,
  });
  return {
    ...schedule,
    scenario,
    runScenario,
    quick,
    stack,
    sizes,
    plan,
    transports,
    serverTransports,
    config: { ...config, ...pluginConfig },
    notes,
  };
}

/** What {@linkcode runConfig} takes beside the options. */
interface ConfigParts {
  scenario: ScenarioName;
  stack: StackName;
  transports: TransportName[];
  sizes: number[];
  plan: SamplingPlan;
  quick: boolean;
  engine: EngineName;
  schedule: RunSchedule;
}

/** The run's config as the record carries it (the scenario's defaults filled in). */
function runConfig(options: BenchOptions, p: ConfigParts): RunConfig {
  const { scenario, plan, schedule: s } = p;
  const serverMode = options.target ? "target" : options.inProcess ? "in-process" : "process";
  const peers = peerSchedule(p.quick, options.rounds, options.blockMs);
  return {
    scenario,
    stack: p.stack,
    transports: p.transports,
    sizes: p.sizes,
    warmupMs: plan.warmupMs,
    sampleMs: plan.sampleMs,
    samples: plan.samples,
    quick: p.quick,
    serverMode,
    target: options.target,
    ...(options.request ? { request: requestRecord(options.request) } : {}),
    ok: options.ok?.text ?? DEFAULT_OK,
    delayMs: options.delayMs ?? 0,
    rate: scenario === "rate" ? options.rate ?? 1000 : options.rate,
    concurrency: scenario === "concurrency"
      ? options.concurrency ?? [1, 8, 64, 256]
      : options.concurrency,
    flows: options.flows,
    streams: scenario === "hol" ? options.streams ?? DEFAULT_STREAMS : options.streams,
    link: options.link,
    engine: p.engine,
    ...(scenario === "capacity" ? { p99BoundMs: options.p99BoundMs ?? DEFAULT_P99_BOUND_MS } : {}),
    schedule: s.schedule,
    ...(s.interleaved
      ? { rounds: s.rounds, blockMs: s.blockCount ? undefined : s.blockMs, seed: s.seed }
      : {}),
    ...(scenario === "flows" && s.schedule === "interleaved"
      ? { seed: s.seed, ...(options.rounds !== undefined ? { rounds: s.rounds } : {}) }
      : {}),
    ...(scenario === "peers" ? { ...peers, seed: s.seed } : {}),
  };
}

/** The given request as the record keeps it (the body's length, not its bytes). */
function requestRecord(r: NonNullable<BenchOptions["request"]>): RequestRecord {
  return {
    method: r.method,
    path: r.path,
    ...(Object.keys(r.headers).length ? { headers: r.headers } : {}),
    ...(r.body ? { bodyBytes: r.body.length } : {}),
  };
}

/** Why a native-stack run lacks a transport, with the command that fixes it. */
async function missingNativeNote(available: TransportName[]): Promise<string> {
  const missing: string[] = [];
  if (!available.includes("h2c")) {
    const { h2ModuleInfo } = await import("../../transports/h2/mod.ts");
    missing.push(`h2 (${await h2ModuleInfo()})`);
  }
  if (!available.includes("h3")) {
    const { loadH3Library } = await import("../../transports/h3/loader.ts");
    const why = await loadH3Library().then(
      () => "not available",
      (err) => (err as Error).message.split("\n")[0],
    );
    missing.push(`h3 (${why})`);
  }
  return `Not measured: ${
    missing.join("; ")
  }. Install the native modules' packages with: sudo bash scripts/setup_system.sh`;
}
