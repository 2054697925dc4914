/**
 * `flows`: NF-to-NF call flows instead of one synthetic request. Per transport
 * the NFs register at the NRF and heartbeat in the background; then, for each
 * UE concurrency level, UEs arrive open loop and each runs its journey
 * (registration, PDU session establishment, AN release and service request)
 * over one connection per NF pair, and a second stream runs the seed's warm
 * GET. Rows: flow completion time per flow (the journey's first flow timed
 * from the UE's intended arrival, so waiting for a UE slot counts), and the
 * latency of every step. Failed flows and retried requests are counted in the
 * rows, never dropped.
 */
import { createRng, Recorder } from "../bench/stats/mod.ts";
import type { BenchOptions, ScenarioPlugin } from "../bench/run/mod.ts";
import type { ResultRow } from "../bench/record/mod.ts";
import type { SbiClient, StackName, TransportName } from "../transports/types.ts";
import {
  type FlowDefinition,
  HEARTBEAT,
  JOURNEY,
  NF_REGISTER,
  type NfType,
  WARM_GET,
} from "./flows/definitions.ts";
import {
  type ConnectionPool,
  DiscoveryCache,
  type FlowRunOptions,
  runStep,
} from "./flows/runner.ts";
import { makeRow, type ScenarioContext } from "../bench/scenarios/mod.ts";
import { pathPids, type PathProbe, procPathProbe } from "./flows/path_cpu.ts";
import { DEFAULT_RULE } from "./verdict_rule.ts";
import { type CellRun, type HeldTransport, runCell } from "./flows_cell.ts";
import {
  flowsDesign,
  scaledDesign,
  streamLookFactor,
  streamPlanFactor,
  WARM_GET_LOOK_FACTOR,
} from "./sequential.ts";

export { flowsDesign };

/** The streams `flows` can measure. */
export const FLOW_STREAMS = ["journey", "warm-get"] as const;
/** Default UE concurrency levels. */
export const DEFAULT_UES = [8];
/** Interval of the NFs' background heartbeats (ms). */
export const HEARTBEAT_MS = 1000;
/** Per-request timeout of a flow step (ms): several retransmission timeouts on a lossy link. */
const STEP_TIMEOUT_MS = 10_000;
/** Extra attempts of a step whose request throws. */
const STEP_RETRIES = 1;
/**
 * Share of the UE slots a default arrival rate keeps busy: enough that the
 * cell measures the concurrency it names, with room for the tail so that
 * arrivals rarely wait for a slot.
 */
export const SLOT_OCCUPANCY = 0.5;
/**
 * Requests per second the whole path (client, server and link relay, on a
 * small lab box) is asked to carry at most. The client costs about what `lab
 * bench`'s client costs per request, the server and relay as much again, so
 * at this rate no process on the path nears a core: on a loopback-speed link
 * the rate stops here rather than at the slots, and the cells stay valid.
 */
export const PATH_REQUEST_RATE = 1500;
/** Time the path adds to each request beyond the link's RTT in the rate's estimate (ms). */
export const PER_REQUEST_MS = 2;

const NF_SERVICES: [NfType, string][] = [
  ["AMF", "namf-comm"],
  ["SMF", "nsmf-pdusession"],
  ["AUSF", "nausf-auth"],
  ["UDM", "nudm-sdm"],
  ["PCF", "npcf-am-policy-control"],
];

/** Requests a stream's flows send per UE once discovery is cached. */
export function requestsPerUe(flows: FlowDefinition[]): number {
  return flows.reduce((n, f) => n + f.steps.filter((s) => !s.discover).length, 0);
}

/**
 * Default arrival rate (UEs per s) for `ues` concurrent UEs: {@link
 * SLOT_OCCUPANCY} of the UE slots busy when each request costs the link's RTT
 * plus `perRequestMs`, and no more than the path carries ({@link
 * PATH_REQUEST_RATE}).
 */
export function defaultArrivalRate(
  ues: number,
  requests: number,
  rttMs: number,
  perRequestMs = PER_REQUEST_MS,
): number {
  const flowMs = requests * (rttMs + perRequestMs);
  return Math.min(PATH_REQUEST_RATE / requests, (ues * SLOT_OCCUPANCY * 1000) / flowMs);
}

/**
 * Blocks each transport runs before a cell's first look (`config.rounds`
 * overrides): every look then stands on several interleaved rounds.
 */
export const FLOW_ROUNDS = 4;
export const QUICK_FLOW_ROUNDS = 3;
/** Options of {@link flowsScenario} beyond the context. */
export interface FlowsScenarioOptions {
  /** Reads the CPU of the path's processes around each block. Default `/proc` for client, server, relay. */
  probe?: PathProbe;
  /** Random source of the round orders. Default seeded from `config.seed` (or a random seed). */
  rng?: () => number;
  /** How the arrival loop waits (with an injected clock). Default a timer. */
  sleep?: (ms: number) => Promise<void>;
}

async function holdTransport(
  ctx: ScenarioContext,
  transport: TransportName,
  stack: StackName,
): Promise<HeldTransport> {
  const clients = new Map<string, Promise<SbiClient>>();
  const pool: ConnectionPool = {
    client(from, to) {
      const key = `${from}/${to}`;
      let c = clients.get(key);
      if (!c) clients.set(key, c = ctx.openClient(transport, { nfType: from }));
      return c;
    },
  };
  const options: FlowRunOptions = {
    pool,
    discovery: new DiscoveryCache(),
    clock: ctx.clock,
    timeoutMs: STEP_TIMEOUT_MS,
    retries: STEP_RETRIES,
  };
  const nfVars: Record<string, string> = {};
  const nfIds: [NfType, string][] = [];
  for (const [nfType, serviceName] of NF_SERVICES) {
    const nfInstanceId = crypto.randomUUID();
    await runStep(NF_REGISTER, { nfInstanceId, nfType, serviceName }, options, nfType);
    nfVars[`${nfType.toLowerCase()}InstanceId`] = nfInstanceId;
    nfIds.push([nfType, nfInstanceId]);
  }
  // Background heartbeats, one per NF per interval, for as long as the run holds the transport.
  const beats = new Recorder();
  let beatFailures = 0;
  let beating = true;
  let beatTimer: ReturnType<typeof setTimeout> | undefined;
  const beatsInFlight = new Set<Promise<void>>();
  const beat = () => {
    if (!beating) return;
    for (const [nfType, nfInstanceId] of nfIds) {
      const p: Promise<void> = runStep(HEARTBEAT, { nfInstanceId }, options, nfType).then(
        (o) => beats.record(o.ns),
        () => void beatFailures++,
      ).finally(() => beatsInFlight.delete(p));
      beatsInFlight.add(p);
    }
    beatTimer = setTimeout(beat, HEARTBEAT_MS);
  };
  beat();
  return {
    transport,
    options,
    nfVars,
    async stop() {
      beating = false;
      clearTimeout(beatTimer);
      await Promise.allSettled(beatsInFlight);
      if (beats.count < 2) return undefined;
      return makeRow({
        id: `flows/${transport}/heartbeat`,
        scenario: "flows",
        transport,
        label: HEARTBEAT.title,
        errors: beatFailures,
        flow: "heartbeat",
        step: HEARTBEAT.name,
        stack,
      }, beats.finish());
    },
  };
}

/**
 * Measures every transport × UE level × stream. Each cell (UE level ×
 * stream) runs its transports in interleaved rounds: every transport's
 * connections stay warm for the whole run, and each round gives every
 * transport one block of UE arrivals in a new random order (seeded), so a
 * change of the machine lands on all transports of the cell alike. A block
 * does not wait for its last flows: the next one starts while they finish,
 * and only a look (the sequential design's, `sequential.ts`) waits for every
 * flow in flight. A cell stops at the look that decides all its flows, at
 * its flow count (`plan.samples`, default the design's last look), or when
 * its share of the run's time is spent: the run's time is `plan.sampleMs` per
 * cell, and what a decided cell leaves goes to the cells after it.
 * `config.schedule = "sequential"` runs one transport's blocks after another.
 */
export async function flowsScenario(
  ctx: ScenarioContext,
  scenarioOptions: FlowsScenarioOptions = {},
): Promise<ResultRow[]> {
  const levels = ctx.config.concurrency ?? DEFAULT_UES;
  const streams = ctx.config.flows ?? [...FLOW_STREAMS];
  const rttMs = ctx.config.link?.rttMs ?? 0;
  // The servers are Deno.serve (h2) and the h3 module whatever the server mode.
  const stack: StackName = ctx.config.stack ?? "native";
  const sequential = ctx.config.schedule === "sequential";
  const rounds = ctx.config.rounds ?? (ctx.config.quick ? QUICK_FLOW_ROUNDS : FLOW_ROUNDS);
  const seed = ctx.config.seed ?? Math.floor(Math.random() * 2 ** 32);
  const rng = scenarioOptions.rng ?? createRng(seed);
  const probe = scenarioOptions.probe ?? procPathProbe(pathPids(ctx.endpoints.pid), ctx.clock);
  const onTimeMs = DEFAULT_RULE.onTimeMs!;
  const design = flowsDesign(ctx.config, ctx.plan.samples);
  const maxFlows = ctx.plan.samples ?? design.looks.at(-1)!;
  const rows: ResultRow[] = [];
  const held: HeldTransport[] = [];
  const cellCount = levels.length * streams.length;
  // The run's time: a share per cell; a cell that stops early leaves its rest to the next.
  const runStart = ctx.clock();
  const runMs = ctx.plan.sampleMs * cellCount;
  // Each cell's share of what is left is in proportion to what it needs to reach its planned
  // flows (a warm GET's: half its last look), less what the cells after it need to reach their
  // first look.
  const needFor = (flowsOf: (stream: string) => number) =>
    levels.flatMap((ues) =>
      streams.map((stream) => {
        const flows = stream === "journey" ? JOURNEY : [WARM_GET];
        const rate = ctx.config.rate ?? defaultArrivalRate(ues, requestsPerUe(flows), rttMs);
        return ctx.transports.length *
          (ctx.plan.warmupMs + CELL_DRAIN_MS + (flowsOf(stream) / rate) * 1000);
      })
    );
  const needs = needFor((stream) => maxFlows * streamPlanFactor(stream));
  const firstLook = Math.min(maxFlows, design.looks[0]);
  const firstNeeds = needFor((stream) => firstLook * streamLookFactor(stream));
  let cellsDone = 0;
  const decisions: string[] = [];
  // A different SUPI range per run, so a server shared between runs never sees a UE twice.
  let nextUe = Math.floor(Math.random() * 1e6) * 1000;
  const run: CellRun = {
    held,
    design,
    maxFlows,
    rounds,
    sequential,
    stack,
    rng,
    probe,
    onTimeMs,
    sleep: scenarioOptions.sleep,
    nextUe: () => nextUe++,
    decisions,
  };
  try {
    for (const t of ctx.transports) held.push(await holdTransport(ctx, t, stack));
    for (const ues of levels) {
      for (const stream of streams) {
        const flows = stream === "journey" ? JOURNEY : [WARM_GET];
        const rate = ctx.config.rate ??
          defaultArrivalRate(ues, requestsPerUe(flows), rttMs);
        const start = ctx.clock();
        const cellMs = cellShareMs(runMs - (start - runStart), needs, firstNeeds, cellsDone);
        const label = `cell ${cellsDone + 1}/${cellCount}: ${stream} × ${ues} UEs`;
        const cell = { ues, stream, flows, rate, start, cellMs, label };
        // A stream's looks and flow count are the design's times its factor (the warm GET's 8).
        const factor = streamLookFactor(stream);
        const own = { ...run, design: scaledDesign(design, factor), maxFlows: maxFlows * factor };
        rows.push(...await runCell(ctx, cell, own));
        cellsDone++;
      }
    }
  } finally {
    for (const h of held) {
      const beatRow = await h.stop();
      if (beatRow) rows.push(beatRow);
    }
  }
  ctx.notes.push(
    `flows: one connection per NF pair; NRF discovery results are cached for their validityPeriod, ` +
      `so measured flows rarely discover; every NF heartbeats every ${HEARTBEAT_MS} ms; a step ` +
      `times out after ${STEP_TIMEOUT_MS / 1000} s and is retried ${STEP_RETRIES}×.`,
    (sequential
      ? `flows: sequential schedule, each transport's blocks of a cell one after another`
      : `flows: each cell ran its transports in interleaved rounds, one block of UE arrivals ` +
        `per transport per round in a new random order (seed ${seed}); every transport's ` +
        `connections stayed open for the whole run`) +
      `; looks at ${design.looks.join(", ")} flows per side` +
      (streams.includes("warm-get") ? ` (warm-get ${WARM_GET_LOOK_FACTOR}× as many)` : "") +
      `, stopping at the first that decides ` +
      `(${decisions.length ? decisions.join("; ") : "none decided"}).`,
  );
  return rows;
}

/**
 * Time a transport's warm-up and looks spend waiting for flows in flight, per
 * cell, beyond their arrivals (ms): across `lossy` a warm-up of 1 s took about
 * 1.3 s, its last flows stalled behind lost segments.
 */
export const CELL_DRAIN_MS = 1000;

/**
 * Time cell `i` may take of what is left of the run: its share in proportion
 * to what each cell still to run needs to reach its last look, but never so
 * much that a later cell could not reach its first look, and never less than
 * its own first look needs (a cell before it that ran over takes from the
 * last cells' extra flows, not from their first look).
 */
export function cellShareMs(
  leftMs: number,
  needs: readonly number[],
  firstNeeds: readonly number[],
  i: number,
): number {
  const share = (leftMs * needs[i]) / needs.slice(i).reduce((a, b) => a + b, 0);
  const reserve = firstNeeds.slice(i + 1).reduce((a, b) => a + b, 0);
  return Math.max(firstNeeds[i], Math.min(share, leftMs - reserve));
}

/** The `flows` scenario as the benchmark's plug-in: checks the streams, sets the UE levels. */
export const flowsPlugin: ScenarioPlugin = {
  run: (ctx) => flowsScenario(ctx),
  configure(options: BenchOptions) {
    for (const f of options.flows ?? []) {
      if (!(FLOW_STREAMS as readonly string[]).includes(f)) {
        throw new RangeError(`Unknown flow stream ${f} (choose from ${FLOW_STREAMS.join(", ")})`);
      }
    }
    return {
      concurrency: options.concurrency ?? DEFAULT_UES,
      flows: options.flows ?? [...FLOW_STREAMS],
    };
  },
};

/** Every scenario the study adds to the benchmark. */
export const STUDY_PLUGINS = { flows: flowsPlugin };
