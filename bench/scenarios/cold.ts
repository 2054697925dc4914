/**
 * `cold`: a new connection per request, the set-up table. For every
 * transport, each way a connection can start (`full` handshake, `resumed`
 * with a session ticket, and `0-rtt` on h3, where a resumed client sends its
 * GET with the ClientHello) is timed phase by phase from the moment the client
 * starts connecting: `connect` (TCP connected; QUIC: the server's first
 * datagram in), `tls` (handshake complete at the client), `first-byte` (the
 * first bytes after the request went out) and `total` (the response
 * complete). Each phase is a row. Across `--link` the report divides by the
 * link's configured RTT; on loopback each row is compared with the floor.
 *
 * The phases come from the native clients' own marks (`setupTimings`); the
 * deno stack's `fetch` shows none, so there only `total` is measured.
 */
import { TicketCache } from "../../transports/ticket_cache.ts";
import type { SbiClient, SetupTimings } from "../../transports/types.ts";
import { Recorder } from "../stats/recorder.ts";
import type { ResultRow } from "../record/schema.ts";
import {
  SETUP_PHASES,
  type SetupMode,
  setupModes,
  type SetupPhase,
} from "../record/setup_modes.ts";
import {
  engineRequest,
  floorFor,
  makeRow,
  requestLabel,
  rowRequest,
  type ScenarioContext,
  StatusTally,
} from "./context.ts";
import { nativePlan, nativeSkipNote, runNative } from "./native_load.ts";
import type { ConnectionTimes } from "../../load/mod.ts";

/** Most new connections per mode (keeps TIME_WAIT sockets bounded). */
const MAX_CONNECTIONS = 2000;
/** Fewest sampled connections per mode, whatever the sampling time. */
const MIN_SAMPLES = 3;

/** Connections the native engine opens at once, one request each (`--engine native`). */
export const NATIVE_COLD_CONNECTIONS = 100;

const PHASE_LABEL: Record<SetupPhase, string> = {
  connect: "connect",
  tls: "TLS handshake",
  "first-byte": "first byte",
  total: "full response",
};

const MODE_LABEL: Record<SetupMode, string> = {
  full: "full handshake",
  resumed: "resumed (ticket)",
  "0-rtt": "0-RTT (ticket, GET early)",
};

/** Client options that make a connection start in `mode`. */
function modeOptions(mode: SetupMode, tickets: TicketCache) {
  if (mode === "full") return { resumption: false };
  return { resumption: true, ticketCache: tickets, earlyData: mode === "0-rtt" };
}

/** Why a connection did not start as `mode` asked, or undefined when it did. */
function modeMiss(mode: SetupMode, client: SbiClient): string | undefined {
  const tls = client.connectionInfo?.()?.tls;
  if (mode === "full" || !tls) return undefined;
  if (!tls.resumed) return "did not resume";
  if (mode === "0-rtt" && tls.earlyData !== "accepted") return "0-RTT was not accepted";
  return undefined;
}

/** Phase value in ms, when the timings have it. */
function phaseMs(t: SetupTimings, phase: SetupPhase): number | undefined {
  switch (phase) {
    case "connect":
      return t.connectMs;
    case "tls":
      return t.tlsMs;
    case "first-byte":
      return t.firstByteMs;
    case "total":
      return t.totalMs;
  }
}

/** Measures every transport's set-up table at the first size. */
export async function coldScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  if (ctx.config.engine === "native") return await nativeRows(ctx);
  const size = ctx.sizes[0];
  const cap = Math.min(ctx.plan.samples ?? MAX_CONNECTIONS, MAX_CONNECTIONS);
  const rows: ResultRow[] = [];
  const misses = new Map<string, number>();
  let phaseless = false;
  for (const transport of ctx.transports) {
    // fetch neither shows nor lets us choose resumption: the deno stack has the first row only.
    const modes = ctx.config.stack === "deno" ? ["full" as const] : setupModes(transport);
    for (const mode of modes) {
      const tickets = new TicketCache();
      const label = `${transport} ${MODE_LABEL[mode]}`;
      const recorders = new Map(SETUP_PHASES.map((p) => [p, new Recorder()]));
      let errors = 0, done = 0, missed = 0;
      let firstError: string | undefined;
      const tally = new StatusTally(ctx.ok);
      const failedOnce = (err: unknown) => {
        errors++;
        firstError ??= (err instanceof Error ? err.message : String(err)).split("\n")[0];
      };
      /** One cold request; records its phases when `record`. */
      const once = async (record: boolean) => {
        const client = await ctx.openClient(transport, modeOptions(mode, tickets));
        try {
          const t0 = performance.now();
          await rowRequest(ctx, client, size, tally);
          const wall = performance.now() - t0;
          if (!record) return;
          const miss = modeMiss(mode, client);
          if (miss) {
            missed++;
            return;
          }
          const t = client.setupTimings?.();
          if (!t) phaseless = true;
          for (const phase of SETUP_PHASES) {
            const ms = t ? phaseMs(t, phase) : phase === "total" ? wall : undefined;
            if (ms !== undefined) recorders.get(phase)!.record(ms * 1e6);
          }
          done++;
        } finally {
          await client.close();
        }
      };
      // Warm-up: at least one connection, which also leaves the first ticket.
      const warmEnd = ctx.clock() + ctx.plan.warmupMs;
      for (let i = 0; i < MAX_CONNECTIONS && (i === 0 || ctx.clock() < warmEnd); i++) {
        if (ctx.signal?.aborted) break;
        await once(false).catch(failedOnce);
      }
      errors = 0;
      const start = ctx.clock();
      const end = start + ctx.plan.sampleMs;
      // At least MIN_SAMPLES connections even when one takes longer than the sampling time
      // (longrtt: 1.5 s per round trip).
      for (let i = 0; i < cap && (i < MIN_SAMPLES || ctx.clock() < end); i++) {
        if (ctx.signal?.aborted) break;
        await once(true).catch(failedOnce);
        ctx.onProgress(label, Math.min(1, (ctx.clock() - start) / ctx.plan.sampleMs));
      }
      const elapsed = (ctx.clock() - start) / 1000;
      if (missed) misses.set(label, missed);
      if (done < 2) {
        // say why there is no row: every request failed, or too few started as asked
        ctx.notes.push(
          `cold ${label}: no row, ${done} request(s) timed` +
            (errors ? `, ${errors} failed (first: ${firstError})` : "") +
            (missed ? `, ${missed} did not start as asked` : "") + ".",
        );
      }
      for (const phase of SETUP_PHASES) {
        const rec = recorders.get(phase)!;
        if (rec.count < 2) continue;
        const row = makeRow({
          id: `cold/${transport}/${mode}/${phase}`,
          scenario: "cold",
          transport,
          label: `${MODE_LABEL[mode]}: ${PHASE_LABEL[phase]} (new client, ${
            requestLabel(ctx, size)
          })`,
          sizeBytes: size,
          concurrency: 1,
          floor: floorFor(transport),
          requestsPerSecond: done / elapsed,
          errors,
          // the mode's responses are counted once, on its full-response row
          ...(phase === "total" ? tally.fields() : {}),
        }, rec.finish());
        ctx.onRow(row);
        rows.push(row);
      }
    }
  }
  for (const [label, n] of misses) {
    ctx.notes.push(`${label}: ${n} connection(s) did not start that way and were left out.`);
  }
  if (phaseless) {
    ctx.notes.push(
      "The deno stack's fetch shows no connection phases and no resumption: its cold rows time a new client's full response only.",
    );
  }
  return rows;
}

/**
 * `--engine native`: the engine opens N connections at once (default 100, or the first
 * `--concurrency` level) and sends one GET on each; every connection's connect, handshake and
 * first-response times (from its own start) are the samples, exactly.
 */
async function nativeRows(ctx: ScenarioContext): Promise<ResultRow[]> {
  const size = ctx.sizes[0];
  const n = Math.min(ctx.config.concurrency?.[0] ?? NATIVE_COLD_CONNECTIONS, MAX_CONNECTIONS);
  const rows: ResultRow[] = [];
  const phases: [string, string, (c: ConnectionTimes) => number | null][] = [
    ["connect", "TCP connect", (c) => c.connectNs],
    ["handshake", "connect + handshake (TLS or QUIC)", (c) => c.handshakeNs],
    [
      "first-response",
      `connect + handshake + first response (${requestLabel(ctx, size)})`,
      (c) => c.firstByteNs,
    ],
  ];
  for (const transport of ctx.transports) {
    const plan = await nativePlan(ctx, transport, {
      ...engineRequest(ctx, size),
      connections: n,
      requests: n,
      requestsPerConnection: 1,
      warmupMs: 0,
    });
    if (!plan) {
      ctx.notes.push(nativeSkipNote("cold", transport));
      continue;
    }
    const run = await runNative(ctx, `${transport} ${n} new connections (native)`, plan);
    for (const [key, what, pick] of phases) {
      if (key === "connect" && transport === "h3") continue; // QUIC has no connect apart from its handshake
      if (key === "handshake" && transport === "h2c") continue; // prior knowledge: nothing after connect
      const rec = new Recorder();
      for (const c of run.result.connections) {
        const v = pick(c);
        if (v !== null) rec.record(v);
      }
      if (rec.count < 2) {
        ctx.notes.push(
          `cold ${transport} ${key} (native): ${rec.count} connection(s) got there, no row.`,
        );
        continue;
      }
      const row = makeRow({
        id: `cold/native/${transport}/${key}/${n}`,
        scenario: "cold",
        transport,
        engine: "native",
        label: `${what}, ${n} connections opened at once (native engine)`,
        sizeBytes: size,
        concurrency: n,
        errors: run.result.connectionsFailed,
        // the run's responses are counted once, on its first-response row
        ...(key === "first-response"
          ? { status: { ...run.result.status }, failed: run.failed }
          : {}),
      }, rec.finish());
      ctx.onRow(row);
      rows.push(row);
    }
    if (ctx.signal?.aborted) break;
  }
  return rows;
}
