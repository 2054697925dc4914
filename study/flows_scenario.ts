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
import { Recorder } from "../bench/recorder.ts";
import type { BenchOptions, ScenarioPlugin } from "../bench/run.ts";
import type { ResultRow } from "../bench/schema.ts";
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
import { makeRow, type ScenarioContext } from "../bench/scenarios/context.ts";
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
 * Highest request rate (req/s) a default arrival rate asks for: on a small lab
 * box more saturates the client and server processes, and the rows would time
 * the machine's queues rather than the transports.
 */
export const MAX_DEFAULT_REQUEST_RATE = 500;

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
 * Default arrival rate (UEs per s) for `ues` concurrent UEs: about half the
 * UE slots busy when each request costs the link's RTT plus `perRequestMs`,
 * and never more than {@link MAX_DEFAULT_REQUEST_RATE} requests per second.
 */
export function defaultArrivalRate(
  ues: number,
  requests: number,
  rttMs: number,
  perRequestMs = 5,
): number {
  const flowMs = requests * (rttMs + perRequestMs);
  return Math.min(MAX_DEFAULT_REQUEST_RATE / requests, (ues * 1000) / (2 * flowMs));
}

interface StreamTally {
  flowTimes: Map<string, Recorder>;
  stepTimes: Map<string, Recorder>;
  failed: Map<string, number>;
  failedAt: Map<string, number>;
  notStarted: Map<string, number>;
  retries: Map<string, number>;
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
      if (s.attempts > 0 && s.status !== undefined) {
        recorder(t.stepTimes, `${flow.name}\n${s.step}`).record(s.ns);
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

/** Measures every transport × UE level × stream. */
export async function flowsScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  const levels = ctx.config.concurrency ?? DEFAULT_UES;
  const streams = ctx.config.flows ?? [...FLOW_STREAMS];
  const rttMs = ctx.config.link?.rttMs ?? 0;
  // The servers are Deno.serve (h2) and the h3 module whatever the server mode.
  const stack: StackName = ctx.config.stack ?? "native";
  const rows: ResultRow[] = [];
  for (const transport of ctx.transports) {
    rows.push(...await measureTransport(ctx, transport, levels, streams, rttMs, stack));
  }
  ctx.notes.push(
    `flows: one connection per NF pair; NRF discovery results are cached for their validityPeriod, ` +
      `so measured flows rarely discover; every NF heartbeats every ${HEARTBEAT_MS} ms; a step ` +
      `times out after ${STEP_TIMEOUT_MS / 1000} s and is retried ${STEP_RETRIES}×.`,
  );
  return rows;
}

async function measureTransport(
  ctx: ScenarioContext,
  transport: TransportName,
  levels: number[],
  streams: string[],
  rttMs: number,
  stack: StackName,
): Promise<ResultRow[]> {
  const clients = new Map<string, Promise<SbiClient>>();
  const pool: ConnectionPool = {
    client(from, to) {
      const key = `${from}/${to}`;
      let c = clients.get(key);
      if (!c) clients.set(key, c = ctx.openClient(transport, { nfType: from }));
      return c;
    },
  };
  const rows: ResultRow[] = [];
  const discovery = new DiscoveryCache();
  const options: FlowRunOptions = {
    pool,
    discovery,
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
  // Background heartbeats, one per NF per interval, for as long as this transport runs.
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
  // A different SUPI range per run, so a server shared between runs never sees a UE twice.
  let nextUe = Math.floor(Math.random() * 1e6) * 1000;
  try {
    for (const ues of levels) {
      for (const stream of streams) {
        const flows = stream === "journey" ? JOURNEY : [WARM_GET];
        const rate = ctx.config.rate ??
          defaultArrivalRate(ues, requestsPerUe(flows), rttMs, 5);
        const label = `${transport} ${stream} × ${ues} UEs`;
        const run = (t: StreamTally | undefined, durationMs: number, maxCount?: number) =>
          runArrivals(
            (due) => journey(flows, { ...nfVars, ...ueVars(nextUe++) }, due, options, t),
            {
              rate,
              maxInFlight: ues,
              durationMs,
              maxCount,
              clock: ctx.clock,
              signal: ctx.signal,
            },
          );
        ctx.onProgress(label, 0);
        // Warm-up: connections open, discovery cached; at least one arrival.
        await run(
          undefined,
          ctx.plan.warmupMs,
          Math.max(1, Math.ceil(rate * ctx.plan.warmupMs / 1000)),
        );
        const t = tally();
        const count = ctx.plan.samples === undefined
          ? undefined
          : ctx.plan.samples * (stream === "warm-get" ? WARM_GET_SAMPLE_FACTOR : 1);
        const r = await run(t, ctx.plan.sampleMs, count);
        ctx.onProgress(label, 1);
        const perSecond = r.started / (r.elapsedMs / 1000);
        if (r.waitedForSlot > 0.05 * r.started) {
          ctx.notes.push(
            `${transport} ${stream} at ${ues} UEs: ${r.waitedForSlot} of ${r.started} arrivals ` +
              `waited for a free UE slot (mean lag ${formatDuration(r.meanLagMs * 1e6)}), so ` +
              "these flow times include queueing on this machine, not only the transport " +
              "(a lower --rate or a bigger box avoids it).",
          );
        }
        for (const flow of flows) {
          const times = t.flowTimes.get(flow.name);
          const failed = t.failed.get(flow.name) ?? 0;
          if (!times || times.count < 2) {
            ctx.notes.push(
              `${transport} ${flow.name} at ${ues} UEs: only ${
                times?.count ?? 0
              } flows completed ` +
                `(${failed} failed${
                  t.firstError ? `; first: ${t.firstError}` : ""
                }), so it has no row.`,
            );
            continue;
          }
          const extra: Record<string, number> = {
            targetRate: rate,
            failed,
            notStarted: t.notStarted.get(flow.name) ?? 0,
            retries: t.retries.get(flow.name) ?? 0,
            meanArrivalLagNs: r.meanLagMs * 1e6,
            maxArrivalLagNs: r.maxLagMs * 1e6,
            waitedForSlot: r.waitedForSlot,
            steps: flow.steps.length,
          };
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
            const stepRow = makeRow({
              id: `flows/${transport}/${flow.name}/${ues}/${step.name}`,
              scenario: "flows",
              transport,
              label: step.title,
              concurrency: ues,
              errors: t.failedAt.get(`${flow.name}\n${step.name}`) ?? 0,
              flow: flow.name,
              step: step.name,
              stack,
            }, st.finish());
            rows.push(stepRow);
          }
        }
      }
    }
  } finally {
    beating = false;
    clearTimeout(beatTimer);
    await Promise.allSettled(beatsInFlight);
  }
  if (beats.count >= 2) {
    rows.push(makeRow({
      id: `flows/${transport}/heartbeat`,
      scenario: "flows",
      transport,
      label: HEARTBEAT.title,
      errors: beatFailures,
      flow: "heartbeat",
      step: HEARTBEAT.name,
      stack,
    }, beats.finish()));
  }
  return rows;
}

/** The `flows` scenario as the benchmark's plug-in: checks the streams, sets the UE levels. */
export const flowsPlugin: ScenarioPlugin = {
  run: flowsScenario,
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
