/** `rate`: open loop at a fixed request rate, coordinated omission corrected. */
import { sampleOpenLoop } from "../measure/sampler.ts";
import type { ResultRow } from "../record/schema.ts";
import {
  engineRequest,
  floorFor,
  makeRow,
  requestLabel,
  rowRequest,
  type ScenarioContext,
  StatusTally,
} from "./context.ts";
import { nativePlan, nativeRow, nativeSkipNote, runNative } from "./native_load.ts";

/** Default open-loop rate (req/s). */
export const DEFAULT_RATE = 1000;

/** Requests in flight the native engine allows per connection under an open-loop rate. */
export const NATIVE_RATE_STREAMS = 256;

/**
 * Two rows per transport: latency from each request's intended send time
 * (corrected) and from its actual send time (uncorrected, what a closed-loop
 * tool would show).
 */
export async function rateScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  return ctx.config.engine === "native" ? await nativeRows(ctx) : await sbiRows(ctx);
}

function label(
  ctx: ScenarioContext,
  size: number,
  rate: number,
  kind: "corrected" | "uncorrected",
): string {
  return `${requestLabel(ctx, size)} at ${rate} req/s, ${
    kind === "corrected" ? "from intended send" : "from actual send (uncorrected)"
  }`;
}

async function nativeRows(ctx: ScenarioContext): Promise<ResultRow[]> {
  const rate = ctx.config.rate ?? DEFAULT_RATE;
  const size = ctx.sizes[0];
  const rows: ResultRow[] = [];
  for (const transport of ctx.transports) {
    const plan = await nativePlan(ctx, transport, {
      ...engineRequest(ctx, size),
      rate,
      streams: NATIVE_RATE_STREAMS,
    });
    if (!plan) {
      ctx.notes.push(nativeSkipNote("rate", transport));
      continue;
    }
    const run = await runNative(ctx, `${transport} ${rate} req/s open loop (native)`, plan);
    for (const kind of ["corrected", "uncorrected"] as const) {
      const row = nativeRow(
        {
          id: `rate/native/${transport}/${size}/${rate}/${kind}`,
          scenario: "rate",
          transport,
          label: `${label(ctx, size, rate, kind)} (native engine)`,
          sizeBytes: size,
          floor: floorFor(transport),
          extra: { targetRate: rate },
        },
        run,
        kind,
      );
      ctx.onRow(row);
      rows.push(row);
    }
    if (ctx.signal?.aborted) break;
  }
  return rows;
}

async function sbiRows(ctx: ScenarioContext): Promise<ResultRow[]> {
  const rate = ctx.config.rate ?? DEFAULT_RATE;
  const size = ctx.sizes[0];
  const rows: ResultRow[] = [];
  for (const transport of ctx.transports) {
    const client = await ctx.openClient(transport);
    try {
      const progressLabel = `${transport} ${rate} req/s open loop`;
      const tally = new StatusTally(ctx.ok);
      const op = () => rowRequest(ctx, client, size, tally, 10_000);
      const r = await sampleOpenLoop(op, rate, ctx.plan, {
        clock: ctx.clock,
        signal: ctx.signal,
        onProgress: (f) => ctx.onProgress(progressLabel, f),
      });
      const achieved = r.completed / (r.elapsedMs / 1000);
      for (const kind of ["corrected", "uncorrected"] as const) {
        const row = makeRow({
          id: `rate/${transport}/${size}/${rate}/${kind}`,
          scenario: "rate",
          transport,
          label: label(ctx, size, rate, kind),
          sizeBytes: size,
          floor: floorFor(transport),
          requestsPerSecond: achieved,
          errors: r.errors + r.dropped,
          // one run, two views: its requests are counted once, on the corrected row
          ...(kind === "corrected" ? tally.fields() : {}),
          extra: {
            targetRate: rate,
            dropped: r.dropped,
            meanSendLagNs: r.meanSendLagMs * 1e6,
            maxSendLagNs: r.maxSendLagMs * 1e6,
          },
        }, kind === "corrected" ? r.corrected : r.uncorrected);
        ctx.onRow(row);
        rows.push(row);
      }
    } finally {
      await client.close();
    }
  }
  return rows;
}
