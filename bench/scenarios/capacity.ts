/**
 * `capacity`: the highest open-loop rate each transport's server sustains with
 * p99 (from each request's intended send time) under a bound, found by
 * doubling the rate until a step fails and then bisecting, every step a short
 * native-engine run. Bounded in steps and in time per transport.
 */
import { formatDuration, formatRate } from "../../lib/units.ts";
import type { ResultRow } from "../record/schema.ts";
import { engineRequest, floorFor, requestLabel, type ScenarioContext } from "./context.ts";
import { nativePlan, nativeRow, type NativeRun, nativeSkipNote, runNative } from "./native_load.ts";

/** Default p99 bound (ms). */
export const DEFAULT_P99_BOUND_MS = 10;
/** First rate tried (req/s). */
export const START_RATE = 1000;
/** Connections and streams per connection the engine uses (the in-flight cap). */
const CONNECTIONS = 4;
const STREAMS = 256;
/** Share of the target rate a step must complete to pass. */
const MIN_ACHIEVED = 0.95;
const MAX_STEPS = 14;
const BISECTIONS = 4;

/** Why a step failed, or null when it passed (pure, for tests). */
export function stepVerdict(run: NativeRun, rate: number, boundNs: number): string | null {
  const r = run.result;
  if (r.errors > 0 || r.partial) return `${r.errors} errors`;
  if (run.failed > 0) return `${run.failed} failed statuses`;
  if (r.latency.p99 > boundNs) return `p99 ${formatDuration(r.latency.p99)}`;
  if (r.reqPerSec < MIN_ACHIEVED * rate) return `only ${formatRate(r.reqPerSec)}`;
  return null;
}

/** One row per transport: the best passing step. */
export async function capacityScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  const boundMs = ctx.config.p99BoundMs ?? DEFAULT_P99_BOUND_MS;
  const boundNs = boundMs * 1e6;
  const size = ctx.sizes[0];
  const quick = ctx.config.quick;
  const stepMs = quick ? 500 : Math.min(ctx.plan.sampleMs, 2000);
  const warmupMs = quick ? 100 : 300;
  const budgetMs = quick ? 10_000 : 60_000;
  const rows: ResultRow[] = [];
  ctx.notes.push(
    `capacity: open-loop steps of ${
      stepMs / 1000
    } s (after ${warmupMs} ms warm-up) on ${CONNECTIONS} ` +
      `connections × ${STREAMS} streams; a step passes with no error and no failed status, p99 ≤ ${boundMs} ms and ` +
      `≥ ${MIN_ACHIEVED * 100} % of the rate completed; doubling from ${START_RATE} req/s, ` +
      `then ${BISECTIONS} bisections, at most ${budgetMs / 1000} s per transport.`,
  );
  for (const transport of ctx.transports) {
    const started = performance.now();
    let best: { rate: number; run: NativeRun } | undefined;
    let fail: number | undefined;
    let rate = START_RATE;
    let bisections = 0;
    const log: string[] = [];
    let skipped = false;
    for (let step = 0; step < MAX_STEPS; step++) {
      if (ctx.signal?.aborted || performance.now() - started > budgetMs) break;
      const plan = await nativePlan(ctx, transport, {
        ...engineRequest(ctx, size),
        rate,
        connections: CONNECTIONS,
        streams: STREAMS,
        durationMs: stepMs,
        warmupMs,
        timeoutMs: Math.max(1000, boundMs * 20),
      });
      if (!plan) {
        ctx.notes.push(nativeSkipNote("capacity", transport));
        skipped = true;
        break;
      }
      const run = await runNative(ctx, `${transport} capacity ${formatRate(rate)}`, plan);
      const why = stepVerdict(run, rate, boundNs);
      log.push(`${Math.round(rate)} ${why ? `✗ (${why})` : "✓"}`);
      if (why) fail = rate;
      else if (!best || rate > best.rate) best = { rate, run };
      if (best === undefined) {
        if (rate <= START_RATE / 8) break; // not even a low rate passes
        rate /= 2;
      } else if (fail === undefined) {
        rate *= 2;
      } else {
        if (++bisections > BISECTIONS) break;
        rate = Math.round((best.rate + fail) / 2);
        if (rate === best.rate || rate === fail) break;
      }
    }
    if (skipped) continue;
    ctx.notes.push(`capacity ${transport}: ${log.join(", ")}.`);
    if (!best) {
      ctx.notes.push(`capacity ${transport}: no step passed, no row.`);
      continue;
    }
    const row = nativeRow({
      id: `capacity/native/${transport}/${size}/${boundMs}`,
      scenario: "capacity",
      transport,
      label: `highest rate with p99 ≤ ${boundMs} ms, ${requestLabel(ctx, size)} (native engine)`,
      sizeBytes: size,
      floor: floorFor(transport),
      extra: {
        targetRate: best.rate,
        ...(fail !== undefined ? { firstFailedRate: fail } : {}),
        p99BoundNs: boundNs,
        steps: log.length,
      },
    }, best.run);
    ctx.onRow(row);
    rows.push(row);
  }
  return rows;
}
