/**
 * `hol`: N concurrent streams (default 16) on one connection, each a closed
 * loop of GETs, reported as per-request latency percentiles per transport.
 * Across a lossy link (`--link lossy`) this is where TCP's head-of-line
 * blocking shows: one lost segment delays every HTTP/2 stream behind it,
 * while a lost QUIC packet delays only the streams whose data it carried.
 */
import { formatBytes } from "../../lib/units.ts";
import { sampleOperation } from "../measure/sampler.ts";
import type { ResultRow } from "../record/schema.ts";
import { floorFor, getPayload, makeRow, payloadPath, type ScenarioContext } from "./context.ts";
import { nativePlan, nativeRow, nativeSkipNote, runNative } from "./native_load.ts";

/** Default concurrent streams. */
export const DEFAULT_STREAMS = 16;

/** Per-request timeout: long enough for several retransmission timeouts. */
const REQUEST_TIMEOUT_MS = 30_000;

/** Measures every transport × size with `streams` requests in flight on one connection. */
export async function holScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  const streams = ctx.config.streams ?? DEFAULT_STREAMS;
  const rows: ResultRow[] = [];
  if (!ctx.config.link) {
    ctx.notes.push(
      "hol ran without --link: on loopback nothing is lost, so no head-of-line blocking can show.",
    );
  }
  if (ctx.config.engine === "native") return [...rows, ...await nativeRows(ctx, streams)];
  for (const transport of ctx.transports) {
    const client = await ctx.openClient(transport);
    try {
      for (const size of ctx.sizes) {
        const label = `${transport} ${formatBytes(size)} × ${streams} streams`;
        const r = await sampleOperation(
          () => getPayload(client, size, REQUEST_TIMEOUT_MS),
          ctx.plan,
          streams,
          { clock: ctx.clock, signal: ctx.signal, onProgress: (f) => ctx.onProgress(label, f) },
        );
        const row = makeRow({
          id: `hol/${transport}/${size}/${streams}`,
          scenario: "hol",
          transport,
          label: `GET ${formatBytes(size)}, ${streams} streams on one connection`,
          sizeBytes: size,
          concurrency: streams,
          floor: ctx.config.link ? undefined : floorFor(transport),
          requestsPerSecond: r.samples.count / (r.elapsedMs / 1000),
          errors: r.errors,
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

/** The same from the native engine (`--engine native`): hundreds of streams cost the client nothing. */
async function nativeRows(ctx: ScenarioContext, streams: number): Promise<ResultRow[]> {
  const rows: ResultRow[] = [];
  transports: for (const transport of ctx.transports) {
    for (const size of ctx.sizes) {
      const plan = await nativePlan(ctx, transport, {
        path: payloadPath(size),
        streams,
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      if (!plan) {
        ctx.notes.push(nativeSkipNote("hol", transport));
        continue transports;
      }
      const run = await runNative(
        ctx,
        `${transport} ${formatBytes(size)} × ${streams} (native)`,
        plan,
      );
      const row = nativeRow({
        id: `hol/native/${transport}/${size}/${streams}`,
        scenario: "hol",
        transport,
        label: `GET ${formatBytes(size)}, ${streams} streams on one connection (native engine)`,
        sizeBytes: size,
        concurrency: streams,
        floor: ctx.config.link ? undefined : floorFor(transport),
      }, run);
      ctx.onRow(row);
      rows.push(row);
      if (ctx.signal?.aborted) return rows;
    }
  }
  return rows;
}
