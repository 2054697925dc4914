/** `concurrency`: N requests in flight on one connection → req/s and latency percentiles. */
import { formatBytes } from "../units.ts";
import { sampleOperation } from "../sampler.ts";
import type { ResultRow } from "../schema.ts";
import { floorFor, getPayload, makeRow, type ScenarioContext } from "./context.ts";

/** Default in-flight levels. */
export const DEFAULT_CONCURRENCY = [1, 8, 64, 256];

/** Measures every transport × level at the first size. */
export async function concurrencyScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  const levels = ctx.config.concurrency ?? DEFAULT_CONCURRENCY;
  const size = ctx.sizes[0];
  const rows: ResultRow[] = [];
  for (const transport of ctx.transports) {
    const client = await ctx.openClient(transport);
    try {
      for (const n of levels) {
        const label = `${transport} ${n} in flight`;
        const r = await sampleOperation(() => getPayload(client, size, 30_000), ctx.plan, n, {
          clock: ctx.clock,
          signal: ctx.signal,
          onProgress: (f) => ctx.onProgress(label, f),
        });
        const row = makeRow({
          id: `concurrency/${transport}/${size}/${n}`,
          scenario: "concurrency",
          transport,
          label: `GET ${formatBytes(size)}, ${n} in flight on one connection`,
          sizeBytes: size,
          concurrency: n,
          floor: n === 1 ? floorFor(transport) : undefined,
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
