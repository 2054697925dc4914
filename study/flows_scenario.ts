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
import { createRng, Recorder, shuffled } from "../bench/stats/mod.ts";
import type { BenchOptions, ScenarioPlugin } from "../bench/run/mod.ts";
import type { ResultRow } from "../bench/record/mod.ts";
import type { SbiClient, StackName, TransportName } from "../transports/types.ts";
import { runArrivals } from "./flows/arrivals.ts";
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
  runFlow,
  runStep,
  ueVars,
} from "./flows/runner.ts";
import { makeRow, type ScenarioContext } from "../bench/scenarios/mod.ts";
import { countStatus } from "../lib/status_set.ts";
import { PathCpu, pathPids, type PathProbe, procPathProbe } from "./flows/path_cpu.ts";
import { DEFAULT_RULE } from "./verdict.ts";
import { flowsDesign, judgeSequential } from "./sequential.ts";

export { flowsDesign };
import { formatDuration, formatRate } from "../lib/units.ts";

/** The streams `flows` can measure. */
export const FLOW_STREAMS = ["journey", "warm-get"] as const;
/** Default UE concurrency levels. */
export const DEFAULT_UES = [8];
/**
 * With a sample count (`--samples`), the warm-GET stream takes this many times
 * as many arrivals as the journey: each is one request, and its p99 needs them.
 */
export const WARM_GET_SAMPLE_FACTOR = 5;
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

interface StreamTally {
  flowTimes: Map<string, Recorder>;
  stepTimes: Map<string, Recorder>;
  failed: Map<string, number>;
  failedAt: Map<string, number>;
  notStarted: Map<string, number>;
  retries: Map<string, number>;
  /** Answers by status per flow and step (`flow\nstep`), and those outside the step's expected ones. */
  stepStatus: Map<string, { status: Record<string, number>; failed: number }>;
  /** Requests sent (attempts), for the CPU per request. */
  requests: number;
  firstError?: string;
}

function tally(): StreamTally {
  return {
    flowTimes: new Map(),
    stepTimes: new Map(),
    failed: new Map(),
    failedAt: new Map(),
    notStarted: new Map(),
    retries: new Map(),
    stepStatus: new Map(),
    requests: 0,
  };
}

function bump(m: Map<string, number>, key: string, by = 1): void {
  m.set(key, (m.get(key) ?? 0) + by);
}

function recorder(m: Map<string, Recorder>, key: string): Recorder {
  let r = m.get(key);
  if (!r) m.set(key, r = new Recorder());
  return r;
}

/** Runs `flows` in order for one UE, timing the first from `dueMs`. */
async function journey(
  flows: FlowDefinition[],
  vars: Record<string, string>,
  dueMs: number,
  options: FlowRunOptions,
  t: StreamTally | undefined,
): Promise<void> {
  for (const [i, flow] of flows.entries()) {
    const o = await runFlow(flow, vars, options);
    if (!t) {
      if (!o.ok) return;
      continue;
    }
    bump(t.retries, flow.name, o.retries);
    for (const s of o.steps) {
      t.requests += s.attempts;
      if (s.attempts > 0 && s.status !== undefined) {
        recorder(t.stepTimes, `${flow.name}\n${s.step}`).record(s.ns);
        const key = `${flow.name}\n${s.step}`;
        const c = t.stepStatus.get(key) ?? { status: {}, failed: 0 };
        t.stepStatus.set(key, c);
        countStatus(c.status, s.status);
        const expect = flow.steps.find((d) => d.name === s.step)?.expect;
        if (expect && !expect.includes(s.status)) c.failed++;
      }
    }
    if (!o.ok) {
      bump(t.failed, flow.name);
      bump(t.failedAt, `${flow.name}\n${o.failedStep}`);
      t.firstError ??= `${flow.name}: ${o.error}`;
      for (const later of flows.slice(i + 1)) bump(t.notStarted, later.name);
      return;
    }
    const from = i === 0 ? dueMs : o.startMs;
    recorder(t.flowTimes, flow.name).record(Math.max(0, o.endMs - from) * 1e6);
  }
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

/** One transport held for the whole run: its connections, NFs and background heartbeats. */
interface HeldTransport {
  transport: TransportName;
  options: FlowRunOptions;
  nfVars: Record<string, string>;
  /** Stops the heartbeats and returns their row, when there were enough. */
  stop(): Promise<ResultRow | undefined>;
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

/** What one transport's blocks of a cell gave. */
interface CellArm {
  held: HeldTransport;
  tally: StreamTally;
  started: number;
  elapsedMs: number;
  lagSumMs: number;
  maxLagMs: number;
  waitedForSlot: number;
  onTime: number;
  cpu: PathCpu;
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
  // Each cell's share of what is left is in proportion to what it needs to reach its last flow,
  // less what the cells after it need to reach their first look.
  const needFor = (flowCount: number) =>
    levels.flatMap((ues) =>
      streams.map((stream) => {
        const flows = stream === "journey" ? JOURNEY : [WARM_GET];
        const rate = ctx.config.rate ?? defaultArrivalRate(ues, requestsPerUe(flows), rttMs);
        return ctx.transports.length *
          (ctx.plan.warmupMs + CELL_DRAIN_MS + (flowCount / rate) * 1000);
      })
    );
  const needs = needFor(maxFlows);
  const firstNeeds = needFor(Math.min(maxFlows, design.looks[0]));
  let cellsDone = 0;
  const decisions: string[] = [];
  // A different SUPI range per run, so a server shared between runs never sees a UE twice.
  let nextUe = Math.floor(Math.random() * 1e6) * 1000;
  try {
    for (const t of ctx.transports) held.push(await holdTransport(ctx, t, stack));
    for (const ues of levels) {
      for (const stream of streams) {
        const flows = stream === "journey" ? JOURNEY : [WARM_GET];
        const rate = ctx.config.rate ??
          defaultArrivalRate(ues, requestsPerUe(flows), rttMs);
        const cellStart = ctx.clock();
        const cellMs = cellShareMs(runMs - (cellStart - runStart), needs, firstNeeds, cellsDone);
        const label = `cell ${cellsDone + 1}/${cellCount}: ${stream} × ${ues} UEs`;
        const run = (
          h: HeldTransport,
          t: StreamTally | undefined,
          durationMs: number,
          maxCount: number,
          detach: boolean,
        ) =>
          runArrivals(
            (due) => journey(flows, { ...h.nfVars, ...ueVars(nextUe++) }, due, h.options, t),
            {
              rate,
              maxInFlight: ues,
              durationMs,
              maxCount,
              clock: ctx.clock,
              signal: ctx.signal,
              onTimeMs,
              sleep: scenarioOptions.sleep,
              detach,
            },
          );
        ctx.onProgress(label, 0);
        // Warm-up of each transport: connections open, discovery cached; at least one arrival.
        for (const h of shuffled(held, rng)) {
          await run(
            h,
            undefined,
            ctx.plan.warmupMs,
            Math.max(1, Math.ceil(rate * ctx.plan.warmupMs / 1000)),
            false,
          );
        }
        // Blocks: the first look stands on `rounds` of them.
        const blockCount = Math.max(1, Math.ceil(Math.min(maxFlows, design.looks[0]) / rounds));
        const blockMs = Math.max(1, (blockCount / rate) * 1000);
        const arms: CellArm[] = held.map((h) => ({
          held: h,
          tally: tally(),
          started: 0,
          elapsedMs: 0,
          lagSumMs: 0,
          maxLagMs: 0,
          waitedForSlot: 0,
          onTime: 0,
          cpu: new PathCpu(),
        }));
        const inFlight: Promise<void>[] = [];
        const open = new Set(flows.map((f) => f.name));
        let looked = 0;
        const deadline = cellStart + cellMs;
        const countOf = (a: CellArm, flow: string) => a.tally.flowTimes.get(flow)?.count ?? 0;
        const least = () =>
          Math.min(...arms.map((a) => Math.min(...[...open].map((f) => countOf(a, f)))));
        const lookDue = () => {
          const next = design.looks.find((l) => l > looked);
          return next !== undefined &&
            Math.min(...arms.map((a) => a.started)) >= next &&
            (looked = next, true);
        };
        const judgeOpen = () => {
          for (const name of [...open]) {
            const h3 = arms.find((a) => a.held.transport === "h3");
            const h2 = arms.filter((a) => a.held.transport !== "h3");
            if (!h3 || h2.length === 0) continue;
            const side = (a: CellArm) => a.tally.flowTimes.get(name)?.values() ?? [];
            const j = judgeSequential(
              side(h3),
              h2.map((a) => ({ transport: a.held.transport, samples: side(a) })),
              { design },
            );
            if (j?.decidedAt !== undefined) {
              open.delete(name);
              decisions.push(`${name} × ${ues} UEs: ${j.status} at ${j.decidedAt} flows`);
            }
          }
        };
        const runBlock = async (a: CellArm) => {
          const left = maxFlows - a.started;
          if (left <= 0) return;
          const before = probe.read();
          const r = await run(a.held, a.tally, blockMs * 1.5, Math.min(blockCount, left), true);
          inFlight.push(r.drained);
          a.cpu.add(before, probe.read());
          a.started += r.started;
          a.elapsedMs += r.elapsedMs;
          a.lagSumMs += r.meanLagMs * r.started;
          a.maxLagMs = Math.max(a.maxLagMs, r.maxLagMs);
          a.waitedForSlot += r.waitedForSlot;
          a.onTime += r.onTime;
        };
        const report = () => {
          const share = Math.max(
            Math.min(1, least() / maxFlows),
            Math.min(1, (ctx.clock() - cellStart) / cellMs),
          );
          ctx.onProgress(label, open.size === 0 ? 1 : share);
        };
        if (sequential) {
          // One transport's blocks after another, each within its share of the cell's time; one look at the end.
          for (const [k, a] of arms.entries()) {
            const until = cellStart + (cellMs * (k + 1)) / arms.length;
            while (a.started < maxFlows && ctx.clock() < until && !ctx.signal?.aborted) {
              await runBlock(a);
              report();
            }
          }
          await Promise.all(inFlight.splice(0));
          judgeOpen();
        } else {
          let stop = false;
          for (let round = 0; !stop; round++) {
            for (const a of shuffled(arms, rng)) {
              // Past the cell's time no block starts (a look takes each side's first n flows);
              // every transport runs at least one.
              if (ctx.signal?.aborted || (round > 0 && ctx.clock() >= deadline)) break;
              await runBlock(a);
            }
            const full = arms.every((a) => a.started >= maxFlows);
            const outOfTime = ctx.clock() >= deadline;
            if (lookDue() || full || outOfTime || ctx.signal?.aborted) {
              // A look, or the cell's end: every flow in flight finishes first.
              await Promise.all(inFlight.splice(0));
              judgeOpen();
              stop = open.size === 0 || full || outOfTime || !!ctx.signal?.aborted;
            }
            report();
          }
        }
        cellsDone++;
        ctx.onProgress(label, 1);
        for (const a of arms) {
          rows.push(...cellRows(ctx, a, flows, ues, rate, stream, stack, rounds));
        }
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
      `; looks at ${design.looks.join(", ")} flows per side, stopping at the first that decides ` +
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

/** The rows of one transport in one cell: each flow's completion time, and each step's latency. */
function cellRows(
  ctx: ScenarioContext,
  a: CellArm,
  flows: FlowDefinition[],
  ues: number,
  rate: number,
  stream: string,
  stack: StackName,
  rounds: number,
): ResultRow[] {
  const transport = a.held.transport;
  const t = a.tally;
  const rows: ResultRow[] = [];
  const perSecond = a.elapsedMs > 0 ? a.started / (a.elapsedMs / 1000) : 0;
  const meanLagMs = a.started ? a.lagSumMs / a.started : 0;
  if (a.waitedForSlot > 0.05 * a.started) {
    ctx.notes.push(
      `${transport} ${stream} at ${ues} UEs: ${a.waitedForSlot} of ${a.started} arrivals ` +
        `waited for a free UE slot (mean lag ${formatDuration(meanLagMs * 1e6)}), so ` +
        "these flow times include queueing on this machine, not only the transport " +
        "(a lower --rate or a bigger box avoids it).",
    );
  }
  const cores = a.cpu.shares();
  for (const flow of flows) {
    const times = t.flowTimes.get(flow.name);
    const failed = t.failed.get(flow.name) ?? 0;
    if (!times || times.count < 2) {
      ctx.notes.push(
        `${transport} ${flow.name} at ${ues} UEs: only ${times?.count ?? 0} flows completed ` +
          `(${failed} failed${t.firstError ? `; first: ${t.firstError}` : ""}), so it has no row.`,
      );
      continue;
    }
    const extra: Record<string, number> = {
      targetRate: rate,
      failed,
      notStarted: t.notStarted.get(flow.name) ?? 0,
      retries: t.retries.get(flow.name) ?? 0,
      meanArrivalLagNs: meanLagMs * 1e6,
      maxArrivalLagNs: a.maxLagMs * 1e6,
      waitedForSlot: a.waitedForSlot,
      steps: flow.steps.length,
      rounds,
      onTimeShare: a.started ? a.onTime / a.started : 1,
    };
    for (const [p, share] of Object.entries(cores)) extra[`cpu:${p}`] = share;
    // CPU per request over the arm's blocks, as `lab bench` rows carry it.
    const cpuS = a.cpu.seconds();
    if (t.requests > 0 && cpuS.client !== undefined) {
      extra.clientCpuNsPerRequest = (cpuS.client / t.requests) * 1e9;
    }
    if (t.requests > 0 && cpuS.server !== undefined) {
      extra.serverCpuNsPerRequest = (cpuS.server / t.requests) * 1e9;
    }
    extra.requests = t.requests;
    for (const [key, n] of t.failedAt) {
      const [f, step] = key.split("\n");
      if (f === flow.name) extra[`failedAt:${step}`] = n;
    }
    const row = makeRow({
      id: `flows/${transport}/${flow.name}/${ues}`,
      scenario: "flows",
      transport,
      label: `${flow.title}, ${ues} UEs at ${formatRate(rate).replace("req/s", "UE/s")}`,
      concurrency: ues,
      requestsPerSecond: perSecond,
      errors: failed,
      extra,
      flow: flow.name,
      stack,
    }, times.finish());
    ctx.onRow(row);
    rows.push(row);
    for (const step of flow.steps) {
      const st = t.stepTimes.get(`${flow.name}\n${step.name}`);
      if (!st || st.count < 2) continue;
      const answers = t.stepStatus.get(`${flow.name}\n${step.name}`);
      rows.push(makeRow({
        id: `flows/${transport}/${flow.name}/${ues}/${step.name}`,
        scenario: "flows",
        transport,
        label: step.title,
        concurrency: ues,
        // failed: answers with a status the step does not expect; errors: the step's other failures
        errors: Math.max(
          0,
          (t.failedAt.get(`${flow.name}\n${step.name}`) ?? 0) - (answers?.failed ?? 0),
        ),
        ...(answers ? { status: { ...answers.status }, failed: answers.failed } : {}),
        flow: flow.name,
        step: step.name,
        stack,
      }, st.finish()));
    }
  }
  return rows;
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
