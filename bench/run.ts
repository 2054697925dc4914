/**
 * The runner: resolves options, starts (or targets) the servers, measures the
 * floors and the chosen scenario, and returns one serialisable run record.
 * It never writes to the console; progress and rows go to callbacks.
 */
import { describePlacement, enablePlacement, placement } from "./affinity.ts";
import {
  type ConnectionInfo,
  type SbiClient,
  type StackName,
  type TransportName,
} from "../transports/types.ts";
import { resolveStack } from "../transports/stack.ts";
import { collectEnvironment } from "./environment.ts";
import { FloorError, MAX_FLOOR_BYTES, measureKernelFloor, measureRuntimeFloor } from "./floors.ts";
import { type Clock, defaultClock, type SamplingPlan } from "./sampler.ts";
import {
  type BenchRun,
  type FloorRow,
  type LinkRecord,
  type ResultRow,
  type RunConfig,
  type ScenarioName,
  SCHEMA_VERSION,
} from "./schema.ts";
import { type Endpoints, parseTargetList, startServers, targetEndpoints } from "./servers.ts";
import { reachableTarget } from "./target_probe.ts";
import type { Scenario, ScenarioContext, TargetRequest } from "./scenarios/context.ts";
import { DEFAULT_OK, type StatusSet } from "../lib/status_set.ts";
import { rttScenario } from "./scenarios/rtt.ts";
import { concurrencyScenario } from "./scenarios/concurrency.ts";
import { coldScenario } from "./scenarios/cold.ts";
import { bulkScenario } from "./scenarios/bulk.ts";
import { rateScenario } from "./scenarios/rate.ts";
import { peerSchedule, peersScenario } from "./lab_itself.ts";
import { DEFAULT_STREAMS, holScenario } from "./scenarios/hol.ts";
import { migrationScenario } from "./scenarios/migration.ts";
import { capacityScenario, DEFAULT_P99_BOUND_MS } from "./scenarios/capacity.ts";
import type { EngineName, RoundsRecord, Schedule } from "./schema.ts";
import { DEFAULT_BLOCK_MS, DEFAULT_ROUNDS, DEFAULT_WARMUP_ROUNDS } from "./rounds.ts";
import { type MachineProbe, procMachineProbe } from "./machine_probe.ts";
import { rttRounds } from "./scenarios/rtt_rounds.ts";

/** Options of {@linkcode runBench}. */
export interface BenchOptions {
  /** Scenario. Default `rtt`. */
  scenario?: ScenarioName;
  /** Implementation family of servers and clients. Default `native` (or `SBILAB_STACK`). */
  stack?: StackName;
  /** Transports. Default every available one on the stack (or the target's). */
  transports?: TransportName[];
  /** Body sizes in bytes. Default [256, 16384]. */
  sizes?: number[];
  /** Warm-up per row in ms. Default 3000 (300 with `quick`). */
  warmupMs?: number;
  /** Sampling per row in ms. Default 5000 (700 with `quick`). */
  sampleMs?: number;
  /** Fixed number of samples per row (sampling then stops at the count or at 60 s). */
  samples?: number;
  /** A run of a few seconds. Default false. */
  quick?: boolean;
  /** Servers in this process. Default false (own process). */
  inProcess?: boolean;
  /** Benchmark a server elsewhere; floors are skipped. */
  target?: string;
  /** h3's own URL when it does not listen at the target's port (else Alt-Svc, else the target). */
  targetH3?: string;
  /** CA file for an https target. */
  caFile?: string;
  /** Skip certificate verification for an https target. */
  insecure?: boolean;
  /** Handler delay in ms passed to the server. Default 0. */
  delayMs?: number;
  /** Open-loop rate for `rate` (req/s). Default 1000. */
  rate?: number;
  /** In-flight levels for `concurrency`. Default [1, 8, 64, 256]. */
  concurrency?: number[];
  /** Concurrent streams on one connection for `hol`. Default 16. */
  streams?: number;
  /** Streams `flows` measures (`journey`, `warm-get`). Default both. */
  flows?: string[];
  /** The emulated link this run crosses (recorded in the run's config). Default none. */
  link?: LinkRecord;
  /** Moves the client to a new source port (the link's NAT rebinding); `migration` needs it. */
  rebind?: () => Promise<void>;
  /** What sends the requests: `native` (the load engine in the transport's C module; the
   * default for concurrency, rate, bulk and capacity) or `sbi` (the full SBI client; the default
   * and the only choice for the other scenarios). */
  engine?: "native" | "sbi";
  /** p99 bound of the `capacity` scenario in ms. Default 10. */
  p99BoundMs?: number;
  /** How arms share the run: `interleaved` rounds (the default for `rtt`) or `sequential`
   * (one row after another; every other scenario runs so). */
  schedule?: Schedule;
  /** Interleaved: measured rounds. Default {@linkcode DEFAULT_ROUNDS} (quick 10). */
  rounds?: number;
  /** Interleaved: block per arm and round in ms. Default {@linkcode DEFAULT_BLOCK_MS} (quick 20). */
  blockMs?: number;
  /** Interleaved: seed of the round orders. Default a random one (recorded in the run). */
  seed?: number;
  /** Reads the machine during interleaved rounds. Default `/proc` (none elsewhere). */
  probe?: MachineProbe;
  /** Skip the floors. Default false. */
  skipFloors?: boolean;
  /** Clock. Default `performance.now`. */
  clock?: Clock;
  /** Progress of the current step (label, 0…1). */
  onProgress?: (label: string, fraction: number) => void;
  /** Called with each finished row. */
  onRow?: (row: ResultRow) => void;
  /** Called with each finished floor. */
  onFloor?: (floor: FloorRow) => void;
  /** Stops the run early. */
  signal?: AbortSignal;
  /** Scenarios a higher layer supplies (the study's `flows`). Default none. */
  plugins?: Partial<Record<ScenarioName, ScenarioPlugin>>;
  /** The request every row sends instead of the payload GET (rtt, concurrency, rate, capacity,
   * cold). Default: the payload GET of each size. */
  request?: TargetRequest;
  /** The statuses that count as a success. Default 2xx and 3xx. */
  ok?: StatusSet;
}

/** Scenarios that send a given request (`--path`, `-X`, `-H`, `-d`) instead of the payload GET. */
export const REQUEST_SCENARIOS: readonly ScenarioName[] = [
  "rtt",
  "concurrency",
  "rate",
  "capacity",
  "cold",
];

/** A scenario supplied from above the benchmark: how it runs and what it adds to the config. */
export interface ScenarioPlugin {
  /** Runs the scenario's rows. */
  run: Scenario;
  /** Checks the options (throws `RangeError`) and returns the config fields the scenario sets. */
  configure(options: BenchOptions): Partial<RunConfig>;
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

function positive(name: string, v: number | undefined, integer = false): void {
  if (v === undefined) return;
  if (!Number.isFinite(v) || v < 0 || (integer && !Number.isInteger(v))) {
    throw new RangeError(`${name} must be a ${integer ? "whole " : ""}number ≥ 0, got ${v}`);
  }
}

/** Runs one benchmark and returns its record. */
export async function runBench(options: BenchOptions = {}): Promise<BenchRun> {
  const clock = options.clock ?? defaultClock;
  const wallStart = Date.now();
  const scenario = options.scenario ?? "rtt";
  const runScenario = SCENARIO_FUNCTIONS[scenario] ?? options.plugins?.[scenario]?.run;
  if (!runScenario) throw new RangeError(`Unknown scenario ${scenario}`);
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
  const plugin = options.plugins?.[scenario];
  const pluginConfig = plugin?.configure(options) ?? {};
  const engine = engineFor(scenario, options.engine);
  if (options.p99BoundMs !== undefined && !(options.p99BoundMs > 0)) {
    throw new RangeError(`p99 bound must be > 0 ms, got ${options.p99BoundMs}`);
  }
  if (options.rate !== undefined && !(options.rate > 0)) {
    throw new RangeError(`rate must be > 0, got ${options.rate}`);
  }
  if (options.request && !REQUEST_SCENARIOS.includes(scenario)) {
    throw new RangeError(
      `--scenario ${scenario} sends its own requests (a request is given for ${
        REQUEST_SCENARIOS.join(", ")
      })`,
    );
  }
  if (options.request && options.sizes) {
    throw new RangeError("--sizes sets the payload GET's sizes: it does not go with --path");
  }
  // a given request is one row per transport (its "size" is its body's, 0 for none)
  const sizes = options.request
    ? [options.request.body?.length ?? 0]
    : options.sizes ?? DEFAULT_SIZES;
  for (const s of options.request ? [] : sizes) {
    if (!(Number.isInteger(s) && s >= 1 && s <= 16 * 1024 * 1024)) {
      throw new RangeError(`Size ${s} is outside 1 B … 16 MiB`);
    }
  }
  const quick = options.quick ?? false;
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
  const peers = peerSchedule(quick, options.rounds, options.blockMs);
  const plan: SamplingPlan = scenario === "peers"
    // One discarded round, then a block per round.
    ? { warmupMs: peers.blockMs, sampleMs: peers.rounds * peers.blockMs }
    : interleaved
    ? {
      warmupMs: options.warmupMs ?? (quick ? 200 : 1000),
      sampleMs: rounds * blockMs,
      samples: blockCount !== undefined ? blockCount * rounds : undefined,
    }
    : {
      warmupMs: options.warmupMs ?? (quick ? 300 : 3000),
      sampleMs: options.samples !== undefined && options.sampleMs === undefined
        ? 60_000
        : options.sampleMs ?? (quick ? 700 : 5000),
      samples: options.samples,
    };
  const stack = resolveStack(options.stack);
  const { availableTransports } = await import("../transports/mod.ts");
  const available = await availableTransports(stack);
  let transports: TransportName[];
  if (options.transports) {
    transports = options.transports;
  } else if (options.target && parseTargetList(options.target)) {
    transports = (["h2c", "h2-tls", "h3"] as const).filter((t) =>
      parseTargetList(options.target!)![t]
    );
  } else if (options.target) {
    transports = (options.target.startsWith("https:") ? ["h2-tls", "h3"] : ["h2c"])
      .concat(options.targetH3 && !options.target.startsWith("https:") ? ["h3"] : [])
      .filter((t) => available.includes(t as TransportName)) as TransportName[];
  } else {
    transports = available;
  }
  const notes: string[] = [];
  if (stack === "deno") {
    notes.push(
      "Stack deno: Deno.serve and fetch on hyper and rustls for h2, Deno's QUIC (quinn, rustls) with nghttp3 framing for h3 (the study's own pairing: what a Deno-based NF runs). Deno's QUIC shows no TLS parameters, tickets, datagram sizes or ECN counts.",
    );
  }
  if (!options.transports && stack === "native" && available.length < 3) {
    notes.push(await missingNativeNote(available));
  }
  const serverMode = options.target ? "target" : options.inProcess ? "in-process" : "process";
  // The peers scenario compares our h2c server with nghttpd and, on the native stack, our h3
  // server with gtlsserver.
  const peerTransports: TransportName[] = stack === "native" && available.includes("h3")
    ? ["h2c", "h3"]
    : ["h2c"];
  const config: RunConfig = {
    scenario,
    stack,
    transports: scenario === "peers" ? peerTransports : transports,
    sizes,
    warmupMs: plan.warmupMs,
    sampleMs: plan.sampleMs,
    samples: plan.samples,
    quick,
    serverMode,
    target: options.target,
    ...(options.request
      ? {
        request: {
          method: options.request.method,
          path: options.request.path,
          ...(Object.keys(options.request.headers).length
            ? { headers: options.request.headers }
            : {}),
          ...(options.request.body ? { bodyBytes: options.request.body.length } : {}),
        },
      }
      : {}),
    ok: options.ok?.text ?? DEFAULT_OK,
    delayMs: options.delayMs ?? 0,
    rate: scenario === "rate" ? options.rate ?? 1000 : options.rate,
    concurrency: scenario === "concurrency"
      ? options.concurrency ?? [1, 8, 64, 256]
      : options.concurrency,
    flows: options.flows,
    streams: scenario === "hol" ? options.streams ?? DEFAULT_STREAMS : options.streams,
    link: options.link,
    engine,
    ...(scenario === "capacity" ? { p99BoundMs: options.p99BoundMs ?? DEFAULT_P99_BOUND_MS } : {}),
    schedule,
    ...(interleaved ? { rounds, blockMs: blockCount ? undefined : blockMs, seed } : {}),
    ...(scenario === "flows" && schedule === "interleaved"
      ? { seed, ...(options.rounds !== undefined ? { rounds } : {}) }
      : {}),
    ...(scenario === "peers" ? { ...peers, seed } : {}),
    ...pluginConfig,
  };
  const environment = await collectEnvironment();
  enablePlacement(serverMode === "process");
  if (serverMode === "process") {
    notes.push(`CPU placement: ${describePlacement(await placement())}.`);
  }
  const progress = options.onProgress ?? (() => {});

  // Floors first, on a quiet machine.
  const floors: FloorRow[] = [];
  let floorsSkipped: string | undefined;
  if (options.target) {
    floorsSkipped =
      "Floors were skipped: the server runs elsewhere (--target), so loopback floors do not apply.";
  } else if (options.skipFloors) {
    floorsSkipped = "Floors were skipped on request.";
  } else if (interleaved) {
    // Measured inside the rounds, beside the transports.
  } else {
    const floorPlan: SamplingPlan = {
      warmupMs: Math.min(plan.warmupMs, quick ? 100 : 500),
      sampleMs: Math.min(plan.sampleMs, quick ? 300 : 2000),
      samples: plan.samples,
    };
    const floorSizes = scenario === "rtt" ? sizes : [sizes[0]];
    const usable = floorSizes.filter((s) => s <= MAX_FLOOR_BYTES);
    for (const size of usable.length ? usable : [256]) {
      for (const protocol of ["tcp", "udp"] as const) {
        for (const source of ["kernel", "runtime"] as const) {
          if (options.signal?.aborted) break;
          progress(`floor ${source} ${protocol} ${size} B`, 0);
          try {
            const f = source === "kernel"
              ? await measureKernelFloor(protocol, size, floorPlan)
              : await measureRuntimeFloor(protocol, size, floorPlan, clock);
            floors.push(f);
            options.onFloor?.(f);
          } catch (err) {
            if (!(err instanceof FloorError || (err as Error).name === "NativeBuildError")) {
              throw err;
            }
            notes.push(
              `The ${source} ${protocol} floor at ${size} B was not measured: ${
                (err as Error).message
              }.`,
            );
          }
          progress(`floor ${source} ${protocol} ${size} B`, 1);
        }
      }
    }
  }

  let endpoints: Endpoints | undefined;
  const clients: SbiClient[] = [];
  const connections: Partial<Record<TransportName, ConnectionInfo>> = {};
  const rows: ResultRow[] = [];
  let roundsRecord: RoundsRecord | undefined;
  try {
    endpoints = options.target
      ? await reachableTarget(
        targetEndpoints(options.target, transports, {
          caFile: options.caFile,
          insecure: options.insecure,
          h3Target: options.targetH3,
        }),
        transports,
        {
          stack,
          altSvc: options.targetH3 === undefined,
          notes,
          ...(options.request ? { path: options.request.path } : {}),
        },
      )
      : await startServers(scenario === "peers" ? peerTransports : transports, {
        stack,
        delayMs: options.delayMs,
        inProcess: options.inProcess,
      });
    if (options.target) {
      config.transports = transports = transports.filter((t) => endpoints!.urls[t]);
    }
    const { createClient } = await import("../transports/mod.ts");
    const ctx: ScenarioContext = {
      endpoints: endpoints ?? { urls: {}, mode: "in-process", close: async () => {} },
      transports,
      sizes,
      plan,
      clock,
      config,
      notes,
      async openClient(t, { origin, ...choices } = {}) {
        const url = origin ?? endpoints?.urls[t];
        if (!url) throw new RangeError(`No endpoint for transport ${t}`);
        const c = await createClient(t, url, {
          stack,
          tls: t === "h2c" ? undefined : endpoints!.tls,
          timeoutMs: 10_000,
          ...choices,
        });
        clients.push(c);
        return c;
      },
      onProgress: progress,
      onRow: (r) => options.onRow?.(r),
      onRounds: (r) => {
        roundsRecord = r;
      },
      rebind: options.rebind,
      signal: options.signal,
      request: options.request,
      ok: options.ok,
    };
    if (interleaved) {
      const floorSizes = floorsSkipped !== undefined
        ? []
        : sizes.filter((s) => s <= MAX_FLOOR_BYTES);
      const r = await rttRounds(ctx, {
        rounds,
        blockMs,
        warmupRounds: DEFAULT_WARMUP_ROUNDS,
        seed,
        blockCount,
        floorSizes,
        probe: options.probe ?? procMachineProbe(endpoints?.pid),
        cores: navigator.hardwareConcurrency,
      });
      rows.push(...r.rows);
      for (const f of r.floors) {
        floors.push(f);
        options.onFloor?.(f);
      }
      roundsRecord = r.rounds;
      const left = sizes.filter((s) => s > MAX_FLOOR_BYTES);
      if (floorSizes.length && left.length) {
        notes.push(
          `No floor at ${left.join(", ")} B: a floor carries at most ${MAX_FLOOR_BYTES} B.`,
        );
      }
    } else {
      rows.push(...await runScenario(ctx));
    }
  } finally {
    for (const c of clients) {
      const info = c.connectionInfo?.();
      if (info && !connections[c.transport]) connections[c.transport] = info;
    }
    await Promise.allSettled(clients.map((c) => c.close()));
    await endpoints?.close();
  }
  if (options.signal?.aborted) notes.push("The run was interrupted; rows may be incomplete.");
  const suites = new Set(
    Object.values(connections).filter((i) => i?.tls?.suite).map((i) =>
      `${i!.tls!.suite}/${i!.tls!.group}`
    ),
  );
  if (suites.size > 1) {
    notes.push(
      `The TLS transports negotiated different suites or groups (${
        [...suites].join(", ")
      }): their rows do not compare like with like.`,
    );
  }
  return {
    schema: SCHEMA_VERSION,
    startedAt: new Date(wallStart).toISOString(),
    durationMs: Date.now() - wallStart,
    config,
    environment,
    floors: { rows: floors, skipped: floorsSkipped },
    rows: rows.map((r) => ({ ...r, stack, id: `${stack}/${r.id}` })),
    connections,
    notes,
    ...(roundsRecord ? { rounds: prefixRoundIds(roundsRecord, stack) } : {}),
  };
}

/** The rounds record with its row ids named like the rows (`<stack>/rtt/…`). */
function prefixRoundIds(r: RoundsRecord, stack: StackName): RoundsRecord {
  const id = (x: string) => (/^(rtt|peers)\//.test(x) ? `${stack}/${x}` : x);
  return {
    ...r,
    order: r.order.map((o) => o.map(id)),
    ratios: r.ratios.map((x) => ({
      ...x,
      id: id(x.id),
      numerator: id(x.numerator),
      denominator: id(x.denominator),
    })),
    noise: {
      ...r.noise,
      armCv: Object.fromEntries(Object.entries(r.noise.armCv).map(([k, v]) => [id(k), v])),
    },
  };
}

/** Why a native-stack run lacks a transport, with the command that fixes it. */
async function missingNativeNote(available: TransportName[]): Promise<string> {
  const missing: string[] = [];
  if (!available.includes("h2c")) {
    const { h2ModuleInfo } = await import("../transports/h2/mod.ts");
    missing.push(`h2 (${await h2ModuleInfo()})`);
  }
  if (!available.includes("h3")) {
    const { loadH3Library } = await import("../transports/h3/loader.ts");
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
