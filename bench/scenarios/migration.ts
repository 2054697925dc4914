/**
 * `migration`: the client's port changes mid-run. Four closed loops of small
 * GETs share one connection; halfway through, the link's relay starts acting
 * as a NAT that moves every client flow to a new source port (`ctx.rebind`).
 * A QUIC server sees a new path, validates it and carries on with the same
 * connection; a TCP server answers the unknown 4-tuple with a reset, so the
 * HTTP/2 connection dies and the client has to connect again.
 *
 * Each row reports the per-request latency and, in `extra`: `gapMs`, the
 * longest interval without a completed response from the last response
 * before the change to the end of the run (so a reconnect that stalls a
 * little after the change counts too); `maxIntervalMs`, the longest interval without a
 * completed response over the whole run; `errorsAfterChange`; `reopened`,
 * how often the scenario had to replace the client because it kept failing
 * (a client that reconnects by itself needs none); `recovered` (1 when a
 * response completed after the change); `sameConnection` (1 when the
 * client's socket to the server, as `ss` lists it, has the same local port
 * at the end as just before the change, 0 when it was replaced, absent when
 * `ss` is missing).
 */
import { Recorder } from "../stats/recorder.ts";
import type { ResultRow } from "../record/schema.ts";
import type { SbiClient, TransportName } from "../../transports/types.ts";
import { getPayload, makeRow, type ScenarioContext } from "./context.ts";

/** Requests in flight during the run. */
const IN_FLIGHT = 4;
/** Body size of each GET. */
const SIZE = 256;
/** Per-request timeout. */
const REQUEST_TIMEOUT_MS = 3000;
/** A client that fails this long without a success is replaced. */
const REOPEN_AFTER_MS = 3000;
/** Shortest run; the change happens halfway. */
const MIN_RUN_MS = 4000;
/** Most requests per transport (bounds the loop whatever the clock says). */
const MAX_REQUESTS = 200_000;

/** Local ports of this network namespace's sockets to `url`'s host and port (TCP, or UDP for h3); undefined without `ss`. */
async function socketPorts(url: string, udp: boolean): Promise<Set<number> | undefined> {
  const u = new URL(url);
  const port = u.port || (u.protocol === "https:" ? "443" : "80");
  try {
    const out = await new Deno.Command("ss", {
      args: ["-Hn", udp ? "-u" : "-t", "dst", `${u.hostname}:${port}`],
      stdout: "piped",
      stderr: "null",
    }).output();
    if (!out.success) return undefined;
    const ports = new Set<number>();
    for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
      const local = line.trim().split(/\s+/)[3];
      const m = local && /:(\d+)$/.exec(local);
      if (m) ports.add(Number(m[1]));
    }
    return ports;
  } catch {
    return undefined;
  }
}

/** What one transport saw around the change. */
export interface MigrationFigures {
  gapMs: number;
  maxIntervalMs: number;
  errorsBefore: number;
  errorsAfterChange: number;
  completedBefore: number;
  completedAfter: number;
  recovered: 0 | 1;
}

/**
 * Pure: the figures from completion times, error times and the change time
 * (all ms on one clock). `endMs` closes the last interval.
 */
export function migrationFigures(
  completions: number[],
  errors: number[],
  changeMs: number,
  startMs: number,
  endMs: number,
): MigrationFigures {
  const sorted = [...completions].sort((a, b) => a - b);
  const before = sorted.filter((t) => t < changeMs);
  const after = sorted.filter((t) => t >= changeMs);
  const lastBefore = before.at(-1) ?? startMs;
  let gap = 0;
  let from = lastBefore;
  for (const t of [...after, endMs]) {
    gap = Math.max(gap, t - from);
    from = t;
  }
  if (after.length === 0) gap = endMs - lastBefore;
  let maxInterval = 0;
  let prev = startMs;
  for (const t of [...sorted, endMs]) {
    maxInterval = Math.max(maxInterval, t - prev);
    prev = t;
  }
  return {
    gapMs: gap,
    maxIntervalMs: maxInterval,
    errorsBefore: errors.filter((t) => t < changeMs).length,
    errorsAfterChange: errors.filter((t) => t >= changeMs).length,
    completedBefore: before.length,
    completedAfter: after.length,
    recovered: after.length > 0 ? 1 : 0,
  };
}

/** Runs the change once per transport. Needs `ctx.rebind` (a `--link` run). */
export async function migrationScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  const rebind = ctx.rebind;
  if (!rebind) {
    throw new RangeError(
      "The migration scenario needs --link (the link's relay moves the client to a new port)",
    );
  }
  const runMs = Math.max(MIN_RUN_MS, ctx.plan.sampleMs);
  const warmMs = Math.min(ctx.plan.warmupMs, 2000);
  const rows: ResultRow[] = [];
  for (const transport of ctx.transports) {
    rows.push(await migrateOne(ctx, transport, rebind, warmMs, runMs));
  }
  ctx.notes.push(
    `migration: ${IN_FLIGHT} GET loops (${SIZE} B, ${REQUEST_TIMEOUT_MS} ms timeout) on one client per transport; ` +
      "halfway through, the link's relay moves the client to a new source port (NAT rebinding). " +
      "gap = longest interval without a completed response from the last one before the change to the end; " +
      "an HTTP/2 client may retry a request whose connection was reset on a new connection (Deno's fetch does), so h2 may show no errors.",
  );
  return rows;
}

async function migrateOne(
  ctx: ScenarioContext,
  transport: TransportName,
  rebind: () => Promise<void>,
  warmMs: number,
  runMs: number,
): Promise<ResultRow> {
  let client: SbiClient = await ctx.openClient(transport);
  let reopened = 0;
  let reopening: Promise<void> | undefined;
  let lastSuccess = ctx.clock();
  // Warm-up on the same client (connection established, congestion window open).
  const warmEnd = ctx.clock() + warmMs;
  while (ctx.clock() < warmEnd && !ctx.signal?.aborted) {
    await getPayload(client, SIZE, REQUEST_TIMEOUT_MS);
  }

  const recorder = new Recorder();
  const completions: number[] = [];
  const errors: number[] = [];
  let firstError: string | undefined;
  const start = ctx.clock();
  const end = start + runMs;
  const changeAt = start + runMs / 2;
  let changeMs = Infinity;
  let started = 0;
  const url = ctx.endpoints.urls[transport]!;
  let portsBefore: Set<number> | undefined;
  const changer = (async () => {
    while (ctx.clock() < changeAt && !ctx.signal?.aborted) {
      await new Promise((r) => setTimeout(r, Math.max(1, Math.min(50, changeAt - ctx.clock()))));
    }
    portsBefore = await socketPorts(url, transport === "h3");
    changeMs = ctx.clock();
    await rebind();
  })();
  const loop = async () => {
    while (ctx.clock() < end && started < MAX_REQUESTS && !ctx.signal?.aborted) {
      started++;
      const c = client;
      const t0 = ctx.clock();
      try {
        await getPayload(c, SIZE, REQUEST_TIMEOUT_MS);
        const t1 = ctx.clock();
        recorder.record((t1 - t0) * 1e6);
        completions.push(t1);
        lastSuccess = t1;
      } catch (err) {
        const t1 = ctx.clock();
        errors.push(t1);
        firstError ??= (err as Error).message;
        if (t1 - lastSuccess > REOPEN_AFTER_MS && c === client) {
          reopening ??= (async () => {
            reopened++;
            await c.close().catch(() => {});
            client = await ctx.openClient(transport);
            lastSuccess = ctx.clock();
          })().finally(() => (reopening = undefined));
        }
        if (reopening) await reopening;
        // A failing client answers at once: pace the retries.
        else await new Promise((r) => setTimeout(r, 5));
      }
      ctx.onProgress(`${transport} migration`, Math.min(1, (ctx.clock() - start) / runMs));
    }
  };
  let portsAfter: Set<number> | undefined;
  try {
    await Promise.all([changer, ...Array.from({ length: IN_FLIGHT }, loop)]);
    portsAfter = await socketPorts(url, transport === "h3");
  } finally {
    await client.close().catch(() => {});
  }
  const same: Record<string, number> = {};
  if (portsBefore && portsAfter && portsBefore.size > 0) {
    same.sameConnection = [...portsBefore].some((p) => portsAfter!.has(p)) ? 1 : 0;
  }
  const f = migrationFigures(completions, errors, changeMs, start, Math.max(end, ctx.clock()));
  const samples = recorder.finish();
  if (samples.count < 2) {
    throw new Error(`${transport}: fewer than two responses completed during the migration run`);
  }
  if (firstError && f.errorsAfterChange > 0) {
    ctx.notes.push(`migration ${transport}: first error: ${firstError.split("\n")[0]}`);
  }
  const row = makeRow({
    id: `migration/${transport}/${SIZE}`,
    scenario: "migration",
    transport,
    label: `GET ${SIZE} B, ${IN_FLIGHT} in flight, client port changes at ${
      (runMs / 2000).toFixed(1)
    } s`,
    sizeBytes: SIZE,
    concurrency: IN_FLIGHT,
    requestsPerSecond: samples.count / (runMs / 1000),
    errors: errors.length,
    extra: { ...f, reopened, runMs, ...same },
  }, samples);
  ctx.onRow(row);
  return row;
}
