/** `rtt`: warm GET round trip, one reused connection, a new stream per request. */
import { sampleOperation } from "../measure/sampler.ts";
import type { ResultRow } from "../record/schema.ts";
import {
  floorFor,
  makeRow,
  requestLabel,
  rowRequest,
  type ScenarioContext,
  StatusTally,
} from "./context.ts";

/** Measures every transport × size. */
export async function rttScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  const rows: ResultRow[] = [];
  for (const transport of ctx.transports) {
    const client = await ctx.openClient(transport);
    try {
      for (const size of ctx.sizes) {
        const label = `${transport} ${requestLabel(ctx, size)}`;
        const tally = new StatusTally(ctx.ok);
        const op = () => rowRequest(ctx, client, size, tally);
        const r = await sampleOperation(op, ctx.plan, 1, {
          clock: ctx.clock,
          signal: ctx.signal,
          onProgress: (f) => ctx.onProgress(label, f),
        });
        const row = makeRow({
          id: `rtt/${transport}/${size}`,
          scenario: "rtt",
          transport,
          label: `${requestLabel(ctx, size)}, warm connection`,
          sizeBytes: size,
          concurrency: 1,
          floor: floorFor(transport),
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
