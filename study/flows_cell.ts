/**
 * One cell of the `flows` scenario: a UE level × a stream, every transport's
 * blocks of UE arrivals in rounds (or one transport after another), judged
 * at the sequential design's looks, and the cell's rows.
 */
import { DEFAULT_MAX_SAMPLES, Recorder, shuffled } from "../bench/stats/mod.ts";
import type { ResultRow } from "../bench/record/mod.ts";
import type { StackName, TransportName } from "../transports/types.ts";
import { runArrivals } from "./flows/arrivals.ts";
import type { FlowDefinition } from "./flows/definitions.ts";
import { type FlowRunOptions, runFlow, ueVars } from "./flows/runner.ts";
import { makeRow, type ScenarioContext } from "../bench/scenarios/mod.ts";
import { countStatus } from "../lib/status_set.ts";
import { PathCpu, type PathProbe } from "./flows/path_cpu.ts";
import { judgeSequential, type SequentialDesign } from "./sequential.ts";
import { formatDuration, formatRate } from "../lib/units.ts";

/** What one transport's flows of a cell gave: times, failures, statuses. */
export interface StreamTally {
  /** Every flow's time in completion order: the looks take each side's first n. */
  flowTimes: Map<string, Recorder>;
  /** Flow times each recorder keeps in order (the cell's most flows). */
  keepFlows: number;
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

/**
 * A transport's tally in a cell of at most `maxFlows` flows per side. Its flow
 * recorders keep every time in order (a recorder past its `maxSamples` keeps
 * a reservoir, whose first n values are no longer the first n flows).
 */
export function tally(maxFlows: number): StreamTally {
  return {
    flowTimes: new Map(),
    keepFlows: Math.max(DEFAULT_MAX_SAMPLES, maxFlows),
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

function recorder(m: Map<string, Recorder>, key: string, maxSamples?: number): Recorder {
  let r = m.get(key);
  if (!r) m.set(key, r = new Recorder({ maxSamples }));
  return r;
}

/** The recorder of flow `name`'s times in tally `t`: every time, in completion order. */
export function flowRecorder(t: StreamTally, name: string): Recorder {
  return recorder(t.flowTimes, name, t.keepFlows);
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
    flowRecorder(t, flow.name).record(Math.max(0, o.endMs - from) * 1e6);
  }
}

/** One transport held for the whole run: its connections, NFs and background heartbeats. */
export interface HeldTransport {
  transport: TransportName;
  options: FlowRunOptions;
  nfVars: Record<string, string>;
  /** Stops the heartbeats and returns their row, when there were enough. */
  stop(): Promise<ResultRow | undefined>;
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

/** One cell to run: a UE level and a stream, its arrival rate and its share of the run's time. */
export interface Cell {
  ues: number;
  stream: string;
  flows: FlowDefinition[];
  /** UE arrivals per second. */
  rate: number;
  /** When the cell starts (the context's clock, ms). */
  start: number;
  /** Time the cell may take (ms). */
  cellMs: number;
  /** Its progress label. */
  label: string;
}

/** What every cell of a run shares. */
export interface CellRun {
  held: HeldTransport[];
  design: SequentialDesign;
  /** Most flows per side a cell takes. */
  maxFlows: number;
  /** Blocks each transport runs before the first look. */
  rounds: number;
  sequential: boolean;
  stack: StackName;
  rng: () => number;
  probe: PathProbe;
  onTimeMs: number;
  sleep?: (ms: number) => Promise<void>;
  /** The next UE's number: each UE its own SUPI. */
  nextUe: () => number;
  /** Where the looks that decided a flow are noted. */
  decisions: string[];
}

/** One cell's run: its transports' arms, the flows still open, the flows in flight. */
class CellRunner {
  readonly arms: CellArm[];
  /** Flows no look has decided yet. */
  readonly open: Set<string>;
  readonly inFlight: Promise<void>[] = [];
  /** The last look taken (flows per side). */
  looked = 0;
  /** Arrivals per block: the first look stands on `rounds` blocks. */
  readonly blockCount: number;
  readonly blockMs: number;
  readonly deadline: number;

  constructor(readonly ctx: ScenarioContext, readonly cell: Cell, readonly run: CellRun) {
    this.blockCount = Math.max(
      1,
      Math.ceil(Math.min(run.maxFlows, run.design.looks[0]) / run.rounds),
    );
    this.blockMs = Math.max(1, (this.blockCount / cell.rate) * 1000);
    this.arms = run.held.map((h) => ({
      held: h,
      tally: tally(run.maxFlows),
      started: 0,
      elapsedMs: 0,
      lagSumMs: 0,
      maxLagMs: 0,
      waitedForSlot: 0,
      onTime: 0,
      cpu: new PathCpu(),
    }));
    this.open = new Set(cell.flows.map((f) => f.name));
    this.deadline = cell.start + cell.cellMs;
  }

  /** Open-loop UE arrivals on one transport, each UE running the cell's flows. */
  arrivals(
    h: HeldTransport,
    t: StreamTally | undefined,
    durationMs: number,
    maxCount: number,
    detach: boolean,
  ) {
    const { ctx, cell, run } = this;
    return runArrivals(
      (due) => journey(cell.flows, { ...h.nfVars, ...ueVars(run.nextUe()) }, due, h.options, t),
      {
        rate: cell.rate,
        maxInFlight: cell.ues,
        durationMs,
        maxCount,
        clock: ctx.clock,
        signal: ctx.signal,
        onTimeMs: run.onTimeMs,
        sleep: run.sleep,
        detach,
      },
    );
  }

  /** Warm-up of each transport: connections open, discovery cached; at least one arrival. */
  async warmUp(): Promise<void> {
    const { ctx, cell, run } = this;
    for (const h of shuffled(run.held, run.rng)) {
      await this.arrivals(
        h,
        undefined,
        ctx.plan.warmupMs,
        Math.max(1, Math.ceil(cell.rate * ctx.plan.warmupMs / 1000)),
        false,
      );
    }
  }

  /** The fewest flows any arm has of any open flow. */
  least(): number {
    const countOf = (a: CellArm, flow: string) => a.tally.flowTimes.get(flow)?.count ?? 0;
    return Math.min(...this.arms.map((a) => Math.min(...[...this.open].map((f) => countOf(a, f)))));
  }

  /** True (and the look taken) when every arm has started the next look's flows. */
  lookDue(): boolean {
    const next = this.run.design.looks.find((l) => l > this.looked);
    return next !== undefined &&
      Math.min(...this.arms.map((a) => a.started)) >= next &&
      (this.looked = next, true);
  }

  /**
   * Judges every open flow, h3 against the h2 transports; a decided one
   * closes. `ended`: the cell's time or flows ran out (a look in hand is taken
   * on the flows there are).
   */
  judgeOpen(ended: boolean): void {
    for (const name of [...this.open]) {
      const h3 = this.arms.find((a) => a.held.transport === "h3");
      const h2 = this.arms.filter((a) => a.held.transport !== "h3");
      if (!h3 || h2.length === 0) continue;
      const side = (a: CellArm) => a.tally.flowTimes.get(name)?.values() ?? [];
      const j = judgeSequential(
        side(h3),
        h2.map((a) => ({ transport: a.held.transport, samples: side(a) })),
        { design: this.run.design, ended },
      );
      if (j?.decidedAt !== undefined) {
        this.open.delete(name);
        this.run.decisions.push(
          `${name} × ${this.cell.ues} UEs: ${j.status} at ${j.decidedAt} flows`,
        );
      }
    }
  }

  /** One block of arrivals on arm `a`; its last flows finish in the background. */
  async runBlock(a: CellArm): Promise<void> {
    const left = this.run.maxFlows - a.started;
    if (left <= 0) return;
    const before = this.run.probe.read();
    const r = await this.arrivals(
      a.held,
      a.tally,
      this.blockMs * 1.5,
      Math.min(this.blockCount, left),
      true,
    );
    this.inFlight.push(r.drained);
    a.cpu.add(before, this.run.probe.read());
    a.started += r.started;
    a.elapsedMs += r.elapsedMs;
    a.lagSumMs += r.meanLagMs * r.started;
    a.maxLagMs = Math.max(a.maxLagMs, r.maxLagMs);
    a.waitedForSlot += r.waitedForSlot;
    a.onTime += r.onTime;
  }

  /** The cell's progress: the larger of its flows' and its time's share. */
  report(): void {
    const { ctx, cell } = this;
    const share = Math.max(
      Math.min(1, this.least() / this.run.maxFlows),
      Math.min(1, (ctx.clock() - cell.start) / cell.cellMs),
    );
    ctx.onProgress(cell.label, this.open.size === 0 ? 1 : share);
  }

  /** One transport's blocks after another, each within its share of the cell's time; one look at the end. */
  async runSequential(): Promise<void> {
    const { ctx, cell, arms } = this;
    for (const [k, a] of arms.entries()) {
      const until = cell.start + (cell.cellMs * (k + 1)) / arms.length;
      while (a.started < this.run.maxFlows && ctx.clock() < until && !ctx.signal?.aborted) {
        await this.runBlock(a);
        this.report();
      }
    }
    await Promise.all(this.inFlight.splice(0));
    this.judgeOpen(true);
  }

  /**
   * Rounds of one block per transport in a new random order, a look when
   * one is due, until every flow is decided, the flows or the time run out.
   */
  async runInterleaved(): Promise<void> {
    const { ctx, arms } = this;
    let stop = false;
    for (let round = 0; !stop; round++) {
      for (const a of shuffled(arms, this.run.rng)) {
        // Past the cell's time no block starts (a look takes each side's first n flows);
        // every transport runs at least one.
        if (ctx.signal?.aborted || (round > 0 && ctx.clock() >= this.deadline)) break;
        await this.runBlock(a);
      }
      const full = arms.every((a) => a.started >= this.run.maxFlows);
      const outOfTime = ctx.clock() >= this.deadline;
      const ended = full || outOfTime || !!ctx.signal?.aborted;
      if (this.lookDue() || ended) {
        // A look, or the cell's end: every flow in flight finishes first.
        await Promise.all(this.inFlight.splice(0));
        this.judgeOpen(ended);
        stop = this.open.size === 0 || ended;
      }
      this.report();
    }
  }
}

/** Runs one cell on every held transport and returns its rows (each arm's, in the held order). */
export async function runCell(
  ctx: ScenarioContext,
  cell: Cell,
  run: CellRun,
): Promise<ResultRow[]> {
  ctx.onProgress(cell.label, 0);
  const c = new CellRunner(ctx, cell, run);
  await c.warmUp();
  if (run.sequential) await c.runSequential();
  else await c.runInterleaved();
  ctx.onProgress(cell.label, 1);
  return c.arms.flatMap((a) =>
    cellRows(ctx, a, cell.flows, cell.ues, cell.rate, cell.stream, run.stack, run.rounds)
  );
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
