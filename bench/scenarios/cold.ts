/**
 * `cold`: a new connection per request. `fetch` cannot show its handshake, so
 * the phases are timed by separate probes in the same run and reported as
 * separate rows: TCP connect (`Deno.connect`), TCP connect + TLS handshake
 * (`Deno.connectTls` + `handshake()`, ALPN h2), and time to the full first
 * response through a fresh SBI client (connect + handshake + request).
 */
import { resolveTls } from "../../transports/tls.ts";
import { formatBytes } from "../units.ts";
import { sampleOperation } from "../sampler.ts";
import type { ResultRow } from "../schema.ts";
import { getPayload, makeRow, payloadPath, type ScenarioContext } from "./context.ts";
import { nativePlan, nativeSkipNote, runNative } from "../native_load.ts";
import { Recorder } from "../recorder.ts";
import type { ConnectionTimes } from "../../transports/load/mod.ts";

/** Most new connections per cold row (keeps TIME_WAIT sockets bounded). */
const MAX_CONNECTIONS = 2000;

/** Connections the native engine opens at once, one request each (`--engine native`). */
export const NATIVE_COLD_CONNECTIONS = 100;

/** Measures the phases for every transport at the first size. */
export async function coldScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  if (ctx.config.engine === "native") return await nativeRows(ctx);
  const size = ctx.sizes[0];
  const plan = {
    ...ctx.plan,
    samples: Math.min(ctx.plan.samples ?? MAX_CONNECTIONS, MAX_CONNECTIONS),
  };
  const rows: ResultRow[] = [];
  const tls = ctx.endpoints.tls ? await resolveTls(ctx.endpoints.tls) : undefined;
  const measure = async (
    id: string,
    transport: string,
    label: string,
    op: () => Promise<void>,
  ): Promise<void> => {
    const r = await sampleOperation(op, plan, 1, {
      clock: ctx.clock,
      signal: ctx.signal,
      onProgress: (f) => ctx.onProgress(`${transport} ${label}`, f),
    });
    const row = makeRow({
      id,
      scenario: "cold",
      transport,
      label,
      sizeBytes: size,
      concurrency: 1,
      requestsPerSecond: r.samples.count / (r.elapsedMs / 1000),
      errors: r.errors,
    }, r.samples);
    ctx.onRow(row);
    rows.push(row);
  };
  for (const transport of ctx.transports) {
    const url = new URL(ctx.endpoints.urls[transport]!);
    const hostname = url.hostname;
    const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
    if (transport !== "h3") {
      await measure(
        `cold/${transport}/tcp-connect`,
        transport,
        "TCP connect (Deno.connect probe)",
        async () => {
          const c = await Deno.connect({ hostname, port });
          c.close();
        },
      );
    }
    if (transport === "h2-tls") {
      if (tls?.insecure) {
        ctx.notes.push("The TLS handshake probe was skipped: -k gives no CA to verify with.");
      } else {
        await measure(
          `cold/${transport}/tls-handshake`,
          transport,
          "TCP connect + TLS handshake (Deno.connectTls probe)",
          async () => {
            const c = await Deno.connectTls({
              hostname,
              port,
              caCerts: tls?.caPem.length ? tls.caPem : undefined,
              alpnProtocols: ["h2"],
            });
            await c.handshake();
            c.close();
          },
        );
      }
    }
    await measure(
      `cold/${transport}/first-response/${size}`,
      transport,
      `New client → full ${formatBytes(size)} response`,
      async () => {
        const client = await ctx.openClient(transport);
        try {
          await getPayload(client, size);
        } finally {
          await client.close();
        }
      },
    );
  }
  if (ctx.transports.includes("h3")) {
    ctx.notes.push(
      "For h3 only the fresh-client time is measured; its QUIC handshake is not probed separately.",
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
      `connect + handshake + first ${formatBytes(size)} response`,
      (c) => c.firstByteNs,
    ],
  ];
  for (const transport of ctx.transports) {
    const plan = await nativePlan(ctx, transport, {
      path: payloadPath(size),
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
      }, rec.finish());
      ctx.onRow(row);
      rows.push(row);
    }
    if (ctx.signal?.aborted) break;
  }
  return rows;
}
