/**
 * The runner's middle steps: start the servers (or reach the target), hand
 * the scenario its context, run it (an interleaved `rtt` run through the
 * round runner, with its floors beside the transports), then close every
 * client and server and keep what each connection negotiated.
 */
import type { ConnectionInfo, SbiClient, TransportName } from "../../transports/types.ts";
import { MAX_FLOOR_BYTES } from "../measure/floors.ts";
import { procMachineProbe } from "../measure/machine_probe.ts";
import { DEFAULT_WARMUP_ROUNDS } from "../measure/rounds.ts";
import { defaultClock } from "../measure/sampler.ts";
import { type Endpoints, startServers, targetEndpoints } from "../measure/servers.ts";
import { reachableTarget } from "../measure/target_probe.ts";
import type { FloorRow, ResultRow, RoundsRecord } from "../record/schema.ts";
import type { ScenarioContext } from "../scenarios/context.ts";
import { rttRounds } from "../scenarios/rtt_rounds.ts";
import type { BenchOptions } from "./options.ts";
import type { ResolvedRun } from "./resolve.ts";
import type { FloorsStep } from "./measure_floors.ts";
import { BENCH_V8_FLAGS_ARG } from "../../lib/v8_flags.ts";

/** What the scenario step measured. */
export interface ScenarioStep {
  rows: ResultRow[];
  /** Floors measured inside interleaved rounds. */
  floors: FloorRow[];
  rounds?: RoundsRecord;
  /** What each transport's first client negotiated. */
  connections: Partial<Record<TransportName, ConnectionInfo>>;
}

/** Starts the servers, or probes the target and keeps the transports that answer. */
async function startEndpoints(run: ResolvedRun, options: BenchOptions): Promise<Endpoints> {
  if (!options.target) {
    return await startServers(run.serverTransports, {
      stack: run.stack,
      delayMs: options.delayMs,
      inProcess: options.inProcess,
      v8Flags: BENCH_V8_FLAGS_ARG,
    });
  }
  const endpoints = await reachableTarget(
    targetEndpoints(options.target, run.transports, {
      caFile: options.caFile,
      insecure: options.insecure,
      h3Target: options.targetH3,
    }),
    run.transports,
    {
      stack: run.stack,
      altSvc: options.targetH3 === undefined,
      notes: run.notes,
      ...(options.request ? { path: options.request.path } : {}),
    },
  );
  run.config.transports = run.transports = run.transports.filter((t) => endpoints.urls[t]);
  return endpoints;
}

/** The context every scenario gets: endpoints, plan, clock, and a client opener that keeps its clients. */
async function scenarioContext(
  run: ResolvedRun,
  options: BenchOptions,
  endpoints: Endpoints,
  clients: SbiClient[],
  onRounds: (r: RoundsRecord) => void,
): Promise<ScenarioContext> {
  const { createClient } = await import("../../transports/mod.ts");
  return {
    endpoints,
    transports: run.transports,
    sizes: run.sizes,
    plan: run.plan,
    clock: options.clock ?? defaultClock,
    config: run.config,
    notes: run.notes,
    async openClient(t, { origin, ...choices } = {}) {
      const url = origin ?? endpoints.urls[t];
      if (!url) throw new RangeError(`No endpoint for transport ${t}`);
      const c = await createClient(t, url, {
        stack: run.stack,
        tls: t === "h2c" ? undefined : endpoints.tls,
        timeoutMs: 10_000,
        ...choices,
      });
      clients.push(c);
      return c;
    },
    onProgress: options.onProgress ?? (() => {}),
    onRow: (r) => options.onRow?.(r),
    onRounds,
    rebind: options.rebind,
    signal: options.signal,
    request: options.request,
    ok: options.ok,
  };
}

/** `rtt` in interleaved rounds: the transports and their floors, arm by arm in every round. */
async function runInterleavedRtt(
  run: ResolvedRun,
  options: BenchOptions,
  ctx: ScenarioContext,
  floorsSkipped: boolean,
): Promise<Pick<ScenarioStep, "rows" | "floors" | "rounds">> {
  const floorSizes = floorsSkipped ? [] : run.sizes.filter((s) => s <= MAX_FLOOR_BYTES);
  const r = await rttRounds(ctx, {
    rounds: run.rounds,
    blockMs: run.blockMs,
    warmupRounds: DEFAULT_WARMUP_ROUNDS,
    seed: run.seed,
    blockCount: run.blockCount,
    floorSizes,
    // The stacks alone run the rows' GET, so they stand wherever loopback floors do.
    stacksSizes: floorsSkipped ? [] : run.sizes,
    probe: options.probe ?? procMachineProbe(ctx.endpoints.pid),
    cores: navigator.hardwareConcurrency,
  });
  for (const f of r.floors) options.onFloor?.(f);
  const left = run.sizes.filter((s) => s > MAX_FLOOR_BYTES);
  if (floorSizes.length && left.length) {
    run.notes.push(
      `No floor at ${left.join(", ")} B: a floor carries at most ${MAX_FLOOR_BYTES} B.`,
    );
  }
  return { rows: r.rows, floors: r.floors, rounds: r.rounds };
}

/** Runs the scenario against fresh servers (or the target) and closes everything after. */
export async function runScenario(
  run: ResolvedRun,
  options: BenchOptions,
  floors: FloorsStep,
): Promise<ScenarioStep> {
  let endpoints: Endpoints | undefined;
  const clients: SbiClient[] = [];
  const step: ScenarioStep = { rows: [], floors: [], connections: {} };
  try {
    endpoints = await startEndpoints(run, options);
    const ctx = await scenarioContext(run, options, endpoints, clients, (r) => {
      step.rounds = r;
    });
    if (run.interleaved) {
      Object.assign(step, await runInterleavedRtt(run, options, ctx, floors.skipped !== undefined));
    } else {
      step.rows.push(...await run.runScenario(ctx));
    }
  } finally {
    for (const c of clients) {
      const info = c.connectionInfo?.();
      if (info && !step.connections[c.transport]) step.connections[c.transport] = info;
    }
    await Promise.allSettled(clients.map((c) => c.close()));
    await endpoints?.close();
  }
  return step;
}
