/** `bulk`: 1 MiB and 16 MiB downloads and uploads on a warm connection → goodput. */
import { formatBytes } from "../../lib/units.ts";
import { sampleOperation } from "../measure/sampler.ts";
import type { ResultRow } from "../record/schema.ts";
import { getPayload, makeRow, payloadPath, postEcho, type ScenarioContext } from "./context.ts";
import { nativePlan, nativeRow, nativeSkipNote, runNative } from "./native_load.ts";

/** Default bulk sizes. */
export const BULK_SIZES = [1024 * 1024, 16 * 1024 * 1024];

/** Most transfers sampled per bulk row. */
const MAX_TRANSFERS = 500;

/** Across an emulated link: longest transfer, and longest time spent starting new ones per row. */
const LINK_TRANSFER_CAP_MS = 30_000;
const LINK_ROW_START_MS = 5_000;

/**
 * Downloads GET the payload route. Uploads POST to the echo route, which
 * sends the body back, so an upload sample carries the size both ways; its
 * goodput counts the uploaded bytes only.
 */
export async function bulkScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  return ctx.config.engine === "native" ? await nativeRows(ctx) : await sbiRows(ctx);
}

async function nativeRows(ctx: ScenarioContext): Promise<ResultRow[]> {
  const sizes = ctx.sizes.filter((s) => s >= 64 * 1024);
  const use = sizes.length ? sizes : BULK_SIZES;
  const link = ctx.config.link;
  ctx.notes.push(
    "Bulk uploads POST to the echo route, which returns the body: each upload sample also downloads it.",
  );
  const rows: ResultRow[] = [];
  transports: for (const transport of ctx.transports) {
    for (const size of use) {
      for (const direction of ["download", "upload"] as const) {
        const plan = await nativePlan(ctx, transport, {
          ...(direction === "download" ? { path: payloadPath(size) } : {
            path: "/nbench/v1/echo",
            body: new Uint8Array(size).fill(0x61),
            headers: { "content-type": "application/octet-stream" },
          }),
          timeoutMs: link ? LINK_TRANSFER_CAP_MS : 120_000,
          ...(link ? { warmupMs: 0, durationMs: LINK_ROW_START_MS } : {}),
        });
        if (!plan) {
          ctx.notes.push(nativeSkipNote("bulk", transport));
          continue transports;
        }
        const run = await runNative(
          ctx,
          `${transport} ${direction} ${formatBytes(size)} (native)`,
          plan,
        );
        if (run.result.completed < 2) {
          ctx.notes.push(
            `bulk ${transport} ${direction} ${
              formatBytes(size)
            } (native): ${run.result.completed} ` +
              `transfer(s) completed and ${run.result.errors} failed, too few for a row.`,
          );
          continue;
        }
        const row = nativeRow({
          id: `bulk/native/${transport}/${direction}/${size}`,
          scenario: "bulk",
          transport,
          label: direction === "download"
            ? `GET ${formatBytes(size)} download (native engine)`
            : `POST ${formatBytes(size)} upload, echoed back (native engine)`,
          sizeBytes: size,
          concurrency: 1,
        }, run);
        row.bytesPerSecond = size / (row.estimate.median / 1e9);
        ctx.onRow(row);
        rows.push(row);
        if (ctx.signal?.aborted) return rows;
      }
    }
  }
  return rows;
}

async function sbiRows(ctx: ScenarioContext): Promise<ResultRow[]> {
  const sizes = ctx.sizes.filter((s) => s >= 64 * 1024);
  const use = sizes.length ? sizes : BULK_SIZES;
  ctx.notes.push(
    "Bulk uploads POST to the echo route, which returns the body: each upload sample also downloads it.",
  );
  const rows: ResultRow[] = [];
  const link = ctx.config.link;
  // Across a link a 16 MiB transfer can take a minute (2 % loss keeps TCP's window small), so
  // there the row has no warm-up, starts transfers for 5 s (also with --quick) and caps each at 30 s.
  const plan = link
    ? {
      warmupMs: 0,
      sampleMs: LINK_ROW_START_MS,
      samples: Math.min(ctx.plan.samples ?? MAX_TRANSFERS, MAX_TRANSFERS),
    }
    : { ...ctx.plan, samples: Math.min(ctx.plan.samples ?? MAX_TRANSFERS, MAX_TRANSFERS) };
  const timeoutMs = link ? LINK_TRANSFER_CAP_MS : 120_000;
  if (link) {
    ctx.notes.push(
      `Across the link, bulk rows have no warm-up, start transfers for at most ${
        LINK_ROW_START_MS / 1000
      } s ` +
        `and cap each transfer at ${
          LINK_TRANSFER_CAP_MS / 1000
        } s (a capped transfer counts as an error).`,
    );
  }
  for (const transport of ctx.transports) {
    const client = await ctx.openClient(transport);
    try {
      for (const size of use) {
        const body = new Uint8Array(size).fill(0x61);
        for (const direction of ["download", "upload"] as const) {
          const label = `${transport} ${direction} ${formatBytes(size)}`;
          const op = direction === "download"
            ? () => getPayload(client, size, timeoutMs)
            : () => postEcho(client, body, timeoutMs);
          let r;
          try {
            r = await sampleOperation(op, plan, 1, {
              clock: ctx.clock,
              signal: ctx.signal,
              onProgress: (f) => ctx.onProgress(label, f),
            });
          } catch (err) {
            // Across a link a capped transfer is a finding, not a failure of the run.
            if (!link || ctx.signal?.aborted) throw err;
            ctx.notes.push(
              `bulk ${transport} ${direction} ${formatBytes(size)}: no row (${
                (err as Error).message
              }).`,
            );
            continue;
          }
          if (r.samples.count < 2) {
            ctx.notes.push(
              `bulk ${transport} ${direction} ${
                formatBytes(size)
              }: ${r.samples.count} transfer(s) completed ` +
                `and ${r.errors} failed or hit the cap, too few for a row.`,
            );
            continue;
          }
          const row = makeRow({
            id: `bulk/${transport}/${direction}/${size}`,
            scenario: "bulk",
            transport,
            label: direction === "download"
              ? `GET ${formatBytes(size)} download`
              : `POST ${formatBytes(size)} upload (echoed back)`,
            sizeBytes: size,
            concurrency: 1,
            errors: r.errors,
          }, r.samples);
          row.bytesPerSecond = size / (row.estimate.median / 1e9);
          row.requestsPerSecond = r.samples.count / (r.elapsedMs / 1000);
          ctx.onRow(row);
          rows.push(row);
        }
      }
    } finally {
      await client.close();
    }
  }
  return rows;
}
