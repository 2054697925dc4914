/** `concurrency`: N requests in flight on one connection → req/s and latency percentiles. */
import { sampleOperation } from "../measure/sampler.ts";
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
import { inFlightNote, littlesLawInFlight } from "../measure/in_flight.ts";

/** Default in-flight levels. */
export const DEFAULT_CONCURRENCY = [1, 8, 64, 256];

/** Measures every transport × level at the first size. */
export async function concurrencyScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  return ctx.config.engine === "native" ? await nativeRows(ctx) : await sbiRows(ctx);
}

async function nativeRows(ctx: ScenarioContext): Promise<ResultRow[]> {
  const levels = ctx.config.concurrency ?? DEFAULT_CONCURRENCY;
  const size = ctx.sizes[0];
  const rows: ResultRow[] = [];
  for (const transport of ctx.transports) {
    const cpu: string[] = [];
    let serverBound = false;
    for (const n of levels) {
      const plan = await nativePlan(ctx, transport, { ...engineRequest(ctx, size), streams: n });
      if (!plan) {
        ctx.notes.push(nativeSkipNote("concurrency", transport));
        break;
      }
      const run = await runNative(ctx, `${transport} ${n} in flight (native)`, plan);
      const figures = {
        reqPerSec: run.result.reqPerSec,
        meanLatencyNs: run.result.latencyUncorrected.mean,
        peerStreamLimit: run.result.peerStreamLimit,
      };
      const achieved = littlesLawInFlight(figures.reqPerSec, figures.meanLatencyNs);
      const row = nativeRow({
        id: `concurrency/native/${transport}/${size}/${n}`,
        scenario: "concurrency",
        transport,
        label: `${requestLabel(ctx, size)}, ${n} in flight on one connection (native engine)`,
        sizeBytes: size,
        concurrency: n,
        floor: n === 1 ? floorFor(transport) : undefined,
        extra: {
          inFlightLittle: achieved,
          ...(run.result.peerStreamLimit ? { peerStreamLimit: run.result.peerStreamLimit } : {}),
        },
      }, run);
      const short = inFlightNote(transport, n, achieved, figures);
      if (short) ctx.notes.push(short);
      ctx.onRow(row);
      rows.push(row);
      cpu.push(`${n}: client ${share(run.clientCpu)}, server ${share(run.serverCpu)}`);
      serverBound = run.serverCpu >= 0.9 && run.clientCpu < 0.9;
      if (ctx.signal?.aborted) return rows;
    }
    if (cpu.length) {
      ctx.notes.push(
        `concurrency ${transport} (native engine), CPU per process (share of one core) by ` +
          `requests in flight: ${cpu.join("; ")}.` +
          (serverBound ? " At the highest level the server saturated, not the engine." : ""),
      );
    }
  }
  return rows;
}

function share(v: number): string {
  return Number.isFinite(v) ? v.toFixed(2) : "–";
}

async function sbiRows(ctx: ScenarioContext): Promise<ResultRow[]> {
  const levels = ctx.config.concurrency ?? DEFAULT_CONCURRENCY;
  const size = ctx.sizes[0];
  const rows: ResultRow[] = [];
  for (const transport of ctx.transports) {
    const client = await ctx.openClient(transport);
    try {
      for (const n of levels) {
        const label = `${transport} ${n} in flight`;
        const tally = new StatusTally(ctx.ok);
        const op = () => rowRequest(ctx, client, size, tally, 30_000);
        const r = await sampleOperation(op, ctx.plan, n, {
          clock: ctx.clock,
          signal: ctx.signal,
          onProgress: (f) => ctx.onProgress(label, f),
        });
        const row = makeRow({
          id: `concurrency/${transport}/${size}/${n}`,
          scenario: "concurrency",
          transport,
          label: `${requestLabel(ctx, size)}, ${n} in flight on one connection`,
          sizeBytes: size,
          concurrency: n,
          floor: n === 1 ? floorFor(transport) : undefined,
          requestsPerSecond: r.samples.count / (r.elapsedMs / 1000),
          errors: r.errors,
          ...tally.fields(),
        }, r.samples);
        ctx.onRow(row);
        rows.push(row);
      }
    } finally {
      await client.close();
    }
  }
  return rows;
}
