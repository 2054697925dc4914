/**
 * `peers` (the lab measuring itself): `h2load`, the native load engine and
 * our SBI client, each against `nghttpd`, against our h2 server module hosted
 * by a plain C loop (bench/native/h2host.c: the module's cost without Deno)
 * and against our own h2c server (on the run's stack), at 1 and 64 streams
 * in flight on one connection and at 8 connections × 64 streams (the SBI
 * client: one connection only), in one run. h2load against the three servers
 * says how our server and its module compare with a C server; the engine
 * and the client against h2load on the same server say how much our load
 * side adds. Servers sit on the peer CPU, the clients on the measuring one.
 * Each row is split into windows; a sample is the time per completed request
 * in one window (1 / throughput), so every row gets a median and a bootstrap
 * CI the same way.
 *
 * HTTP/3 has no h2load here: its reference server is `gtlsserver` (ngtcp2's
 * own example server, on the same ngtcp2, nghttp3 and GnuTLS). The native h3
 * engine and our SBI h3 client load gtlsserver, sbilab's h3 module hosted by
 * a plain C loop (bench/native/h3host.c: the module's cost without Deno) and
 * our h3 server, at 1 and 64 streams on one connection.
 */
import { Recorder } from "./recorder.ts";
import { onServerCpu, placement } from "./affinity.ts";
import { runLoad } from "../load/mod.ts";
import type { EngineName } from "./schema.ts";
import { sampleOperation, type SamplingPlan } from "./sampler.ts";
import type { ResultRow } from "./schema.ts";
import { makeRow, payloadPath, type ScenarioContext } from "./scenarios/context.ts";
import { findTool, freePort, freeUdpPort, waitForPort } from "../lib/host.ts";
import { createDevPki, DEV_PKI_FILES, writeDevPki } from "../transports/pki.ts";
import { ensureBuilt } from "../lib/native_build.ts";

/** Connections × streams compared with h2load (the SBI client and fetch rows: one connection only). */
export const PEER_SHAPES = [
  { connections: 1, streams: 1 },
  { connections: 1, streams: 64 },
  { connections: 8, streams: 64 },
];

/** The h2 peer rows of sbilab's h2 server module hosted by a C loop instead of Deno. */
export const H2_HOST = "sbilab h2c module in a C host";

/** The h3 peer row of sbilab's h3 module hosted by a C loop instead of Deno. */
export const H3_HOST = "sbilab h3 module in a C host";

/** Streams in flight on the one connection of the h3 peer rows. */
export const H3_PEER_STREAMS = [1, 64];

/** Raised when a peer tool is missing or misbehaves. */
export class PeerError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "PeerError";
  }
}

/** Parses h2load's summary; returns req/s and succeeded requests. */
export function parseH2loadOutput(
  text: string,
): { reqPerSec: number; succeeded: number; failed: number } {
  const fin = /finished in [\d.]+\w*s?, ([\d.]+) req\/s/.exec(text);
  const req = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed/.exec(
    text,
  );
  if (!fin || !req) throw new PeerError("Cannot read h2load's summary line");
  return { reqPerSec: Number(fin[1]), succeeded: Number(req[1]), failed: Number(req[2]) };
}

/** One server the peers scenario loads, and the path of its GET. */
interface PeerTarget {
  name: string;
  port: number;
  path: string;
}

/** The peers scenario (see the module comment). */
export async function peersScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  const missing = [];
  if (!findTool("nghttpd")) missing.push("nghttpd (apt-get install nghttp2-server)");
  if (!findTool("h2load")) missing.push("h2load (apt-get install nghttp2-client)");
  if (missing.length) {
    ctx.notes.push(`The peers comparison was skipped: missing ${missing.join(" and ")}.`);
    return [];
  }
  const size = ctx.sizes[0];
  // Built before any server starts, so a failed build leaves nothing running.
  const hostExe = await ensureBuilt("h2host", { quiet: true });
  const docs = await Deno.makeTempDir({ prefix: "sbilab-peers-" });
  await Deno.writeFile(`${docs}/payload`, new Uint8Array(size).fill(0x61));
  const port = freePort();
  const [cmd, cmdArgs] = onServerCpu(await placement(), "nghttpd", [
    "--no-tls",
    "-d",
    docs,
    String(port),
  ]);
  const nghttpd = new Deno.Command(cmd, {
    args: cmdArgs,
    stdout: "null",
    stderr: "null",
    stdin: "null",
  }).spawn();
  const hostPort = freePort();
  const [hostCmd, hostArgs] = onServerCpu(await placement(), hostExe, [
    String(hostPort),
    String(size),
  ]);
  const host = new Deno.Command(hostCmd, {
    args: hostArgs,
    stdout: "null",
    stderr: "null",
    stdin: "null",
  }).spawn();
  const targets: PeerTarget[] = [
    { name: "nghttpd", port, path: "/payload" },
    { name: H2_HOST, port: hostPort, path: "/payload" },
  ];
  const ours = ctx.endpoints.urls.h2c;
  if (ours) {
    targets.push({
      name: `sbilab h2c (${ctx.config.stack ?? "native"} stack)`,
      port: Number(new URL(ours).port),
      path: payloadPath(size),
    });
  }
  const rows: ResultRow[] = [];
  const windows = ctx.config.quick ? 3 : 5;
  const windowMs = Math.max(200, ctx.plan.sampleMs / windows);
  try {
    await waitForPort(port, 10_000);
    await waitForPort(hostPort, 10_000);
    for (const target of targets) {
      const origin = `http://127.0.0.1:${target.port}`;
      const client = await ctx.openClient("h2c", { origin });
      const sbi = async () => {
        const r = await client.request({ path: target.path });
        if (r.status !== 200 || r.body.length !== size) {
          throw new PeerError(`${target.name} answered ${r.status} with ${r.body.length} bytes`);
        }
      };
      const ratios: string[] = [];
      for (const shape of PEER_SHAPES) {
        const { connections, streams } = shape;
        if (connections === 1) {
          const rec = new Recorder();
          let errors = 0;
          for (let w = 0; w < windows; w++) {
            const plan: SamplingPlan = {
              warmupMs: w === 0 ? ctx.plan.warmupMs : 0,
              sampleMs: windowMs,
            };
            const r = await sampleOperation(sbi, plan, streams, {
              clock: ctx.clock,
              signal: ctx.signal,
              onProgress: (f) =>
                ctx.onProgress(`sbilab client → ${target.name}, ${streams}`, (w + f) / windows),
            });
            errors += r.errors;
            rec.record((r.elapsedMs * 1e6) / r.samples.count);
          }
          rows.push(peerRow("sbilab client", "sbi", target.name, shape, size, rec, errors));
          ctx.onRow(rows.at(-1)!);
        }
        const native = new Recorder();
        let nativeErrors = 0;
        for (let w = 0; w < windows; w++) {
          ctx.onProgress(`native engine → ${target.name}, ${connections}×${streams}`, w / windows);
          const r = await runLoad({
            protocol: "h2",
            host: "127.0.0.1",
            port: target.port,
            headers: [
              [":method", "GET"],
              [":scheme", "http"],
              [":authority", `127.0.0.1:${target.port}`],
              [":path", target.path],
            ],
            connections,
            streams,
            durationMs: windowMs,
            warmupMs: w === 0 ? ctx.plan.warmupMs : 0,
          }, { signal: ctx.signal });
          nativeErrors += r.errors;
          if (r.completed < 1) {
            throw new PeerError(`the native engine completed no request: ${r.error}`);
          }
          native.record(1e9 / r.reqPerSec);
        }
        const nativeRow = peerRow(
          "sbilab native engine",
          "native",
          target.name,
          shape,
          size,
          native,
          nativeErrors,
        );
        rows.push(nativeRow);
        ctx.onRow(nativeRow);
        const h2loadRow = await h2loadPeerRow(ctx, target, shape, size, windows, windowMs);
        rows.push(h2loadRow);
        ctx.onRow(h2loadRow);
        ratios.push(
          `${connections}×${streams}: ${
            (nativeRow.requestsPerSecond! / h2loadRow.requestsPerSecond!).toFixed(2)
          }×`,
        );
      }
      ctx.notes.push(
        `Native engine ÷ h2load req/s against ${target.name} (medians of ${windows} windows each): ${
          ratios.join(", ")
        }.`,
      );
    }
  } finally {
    for (const child of [nghttpd, host]) {
      try {
        child.kill("SIGTERM");
      } catch {
        // exited
      }
      await child.status;
    }
    await Deno.remove(docs, { recursive: true }).catch(() => {});
  }
  rows.push(...await h3Peers(ctx, size));
  return rows;
}

/** A C reference server for the h3 rows, on the peer CPU. */
interface H3Peer {
  port: number;
  close(): Promise<void>;
}

/**
 * Starts `exe` with the arguments `args(dir, port)` gives (`dir` holds a dev
 * PKI's files) on the peer CPU; resolves once it answers `path`.
 */
async function startH3Peer(
  ctx: ScenarioContext,
  name: string,
  exe: string,
  args: (dir: string, port: number) => string[],
  path: string,
): Promise<H3Peer> {
  const dir = await Deno.makeTempDir({ prefix: "sbilab-peers-h3-" });
  await writeDevPki(dir, await createDevPki());
  const port = freeUdpPort();
  const [cmd, cmdArgs] = onServerCpu(await placement(), exe, args(dir, port));
  const child = new Deno.Command(cmd, {
    args: cmdArgs,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const close = async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // exited
    }
    await child.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  // Until it has bound, a request fails at once (ICMP port unreachable).
  const probe = await ctx.openClient("h3", {
    origin: `https://127.0.0.1:${port}`,
    tls: { insecure: true },
    timeoutMs: 500,
  });
  let up = false;
  try {
    for (let i = 0; i < 100 && !up; i++) {
      up = await probe.request({ path }).then(() => true, () => false);
      if (!up) await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await probe.close();
  }
  if (!up) {
    await close();
    throw new PeerError(`${name} did not answer within 5 s`);
  }
  return { port, close };
}

/** gtlsserver (ngtcp2's example server), answering `/<n>` with n bytes. */
function startGtlsserver(ctx: ScenarioContext, size: number): Promise<H3Peer> {
  return startH3Peer(ctx, "gtlsserver", findTool("gtlsserver")!, (dir, port) => [
    "-q",
    "127.0.0.1",
    String(port),
    `${dir}/${DEV_PKI_FILES.serverKey}`,
    `${dir}/${DEV_PKI_FILES.serverCert}`,
  ], `/${size}`);
}

/** sbilab's h3 module in a C loop (bench/native/h3host.c), answering every path with `size` bytes. */
async function startH3Host(ctx: ScenarioContext, size: number): Promise<H3Peer> {
  const exe = await ensureBuilt("h3host", { quiet: true });
  return startH3Peer(ctx, "the h3 module's C host", exe, (dir, port) => [
    `${dir}/${DEV_PKI_FILES.serverCert}`,
    `${dir}/${DEV_PKI_FILES.serverKey}`,
    String(port),
    String(size),
  ], `/${size}`);
}

/** The HTTP/3 rows (see the module comment); none without gtlsserver or our h3 server. */
async function h3Peers(ctx: ScenarioContext, size: number): Promise<ResultRow[]> {
  const ours = ctx.endpoints.urls.h3;
  if (!ours) return [];
  if (!findTool("gtlsserver")) {
    ctx.notes.push(
      "The h3 peers were skipped: gtlsserver is missing (apt-get install ngtcp2-server).",
    );
    return [];
  }
  const rows: ResultRow[] = [];
  const windows = ctx.config.quick ? 3 : 5;
  const windowMs = Math.max(200, ctx.plan.sampleMs / windows);
  const gtls = await startGtlsserver(ctx, size);
  let host: H3Peer | undefined;
  try {
    host = await startH3Host(ctx, size);
    const targets = [
      { name: "gtlsserver", port: gtls.port, path: `/${size}`, insecure: true },
      { name: H3_HOST, port: host.port, path: `/${size}`, insecure: true },
      {
        name: "sbilab h3",
        port: Number(new URL(ours).port),
        path: payloadPath(size),
        insecure: false,
      },
    ];
    const engineRate = new Map<string, number>();
    for (const target of targets) {
      const origin = `https://127.0.0.1:${target.port}`;
      const client = await ctx.openClient(
        "h3",
        target.insecure ? { origin, tls: { insecure: true } } : { origin },
      );
      const tls = target.insecure ? undefined : ctx.endpoints.tls;
      const caPem = tls?.ca && typeof tls.ca === "object" && "path" in tls.ca
        ? await Deno.readFile(tls.ca.path)
        : undefined;
      const sbi = async () => {
        const r = await client.request({ path: target.path });
        if (r.status !== 200 || r.body.length !== size) {
          throw new PeerError(`${target.name} answered ${r.status} with ${r.body.length} bytes`);
        }
      };
      for (const streams of H3_PEER_STREAMS) {
        const shape = { connections: 1, streams };
        const rec = new Recorder();
        let errors = 0;
        for (let w = 0; w < windows; w++) {
          const r = await sampleOperation(
            sbi,
            {
              warmupMs: w === 0 ? ctx.plan.warmupMs : 0,
              sampleMs: windowMs,
            },
            streams,
            {
              clock: ctx.clock,
              signal: ctx.signal,
              onProgress: (f) =>
                ctx.onProgress(`sbilab h3 client → ${target.name}, ${streams}`, (w + f) / windows),
            },
          );
          errors += r.errors;
          rec.record((r.elapsedMs * 1e6) / r.samples.count);
        }
        rows.push(peerRow("sbilab h3 client", "sbi", target.name, shape, size, rec, errors));
        ctx.onRow(rows.at(-1)!);
        const native = new Recorder();
        let nativeErrors = 0;
        for (let w = 0; w < windows; w++) {
          ctx.onProgress(`native h3 engine → ${target.name}, 1×${streams}`, w / windows);
          const r = await runLoad({
            protocol: "h3",
            host: "127.0.0.1",
            port: target.port,
            insecure: target.insecure,
            caPem,
            serverName: target.insecure ? undefined : "localhost",
            headers: [
              [":method", "GET"],
              [":scheme", "https"],
              [":authority", `127.0.0.1:${target.port}`],
              [":path", target.path],
            ],
            connections: 1,
            streams,
            durationMs: windowMs,
            warmupMs: w === 0 ? ctx.plan.warmupMs : 0,
          }, { signal: ctx.signal });
          nativeErrors += r.errors;
          if (r.completed < 1) {
            throw new PeerError(`the native h3 engine completed no request: ${r.error}`);
          }
          native.record(1e9 / r.reqPerSec);
        }
        const row = peerRow(
          "sbilab native h3 engine",
          "native",
          target.name,
          shape,
          size,
          native,
          nativeErrors,
        );
        rows.push(row);
        ctx.onRow(row);
        engineRate.set(`${target.name}/${streams}`, row.requestsPerSecond!);
      }
    }
    const ratios = (ours: string) =>
      H3_PEER_STREAMS.map((m) =>
        `1×${m}: ${
          (engineRate.get(`${ours}/${m}`)! / engineRate.get(`gtlsserver/${m}`)!).toFixed(2)
        }×`
      ).join(", ");
    ctx.notes.push(
      `Native h3 engine: sbilab h3 ÷ gtlsserver req/s (medians of ${windows} windows each): ${
        ratios("sbilab h3")
      }; the same module in a C host ÷ gtlsserver: ${ratios(H3_HOST)} ` +
        "(the module's own cost; the difference to sbilab h3 is Deno's around it).",
    );
  } finally {
    await host?.close();
    await gtls.close();
  }
  return rows;
}

/** h2load against `target` with one shape, in `windows` windows. */
async function h2loadPeerRow(
  ctx: ScenarioContext,
  target: PeerTarget,
  shape: { connections: number; streams: number },
  size: number,
  windows: number,
  windowMs: number,
): Promise<ResultRow> {
  const rec = new Recorder();
  let failed = 0;
  for (let w = 0; w < windows; w++) {
    ctx.onProgress(`h2load → ${target.name}, ${shape.connections}×${shape.streams}`, w / windows);
    const warm = w === 0 ? Math.max(100, Math.round(ctx.plan.warmupMs)) : 0;
    const args = [
      "-c",
      String(shape.connections),
      "-t",
      "1",
      "-m",
      String(shape.streams),
      "-D",
      `${Math.round(windowMs)}ms`,
    ];
    if (warm) args.push(`--warm-up-time=${warm}ms`);
    args.push(`http://127.0.0.1:${target.port}${target.path}`);
    const out = await new Deno.Command("h2load", { args, stdout: "piped", stderr: "piped" })
      .output();
    const s = parseH2loadOutput(new TextDecoder().decode(out.stdout));
    failed += s.failed;
    if (s.succeeded < 1 || s.reqPerSec <= 0) {
      throw new PeerError(`h2load completed no request against ${target.name}`);
    }
    rec.record(1e9 / s.reqPerSec);
  }
  return peerRow("h2load", "peer", target.name, shape, size, rec, failed);
}

function slug(text: string): string {
  return text.replace(/[^a-z0-9]+/gi, "-").replace(/-$/, "");
}

function peerRow(
  name: string,
  engine: EngineName,
  server: string,
  shape: { connections: number; streams: number },
  size: number,
  rec: Recorder,
  errors: number,
): ResultRow {
  const { connections, streams } = shape;
  const key = connections === 1 ? String(streams) : `${connections}x${streams}`;
  const row = makeRow({
    id: `peers/${slug(name)}/${slug(server)}/${size}/${key}`,
    scenario: "peers",
    transport: name,
    engine,
    label: `GET ${size} B from ${server}, ${
      connections === 1 ? "" : `${connections} connections × `
    }${streams} stream${streams > 1 ? "s" : ""} in flight (time per request)`,
    sizeBytes: size,
    concurrency: connections * streams,
    errors,
  }, rec.finish());
  row.requestsPerSecond = 1e9 / row.estimate.median;
  return row;
}
