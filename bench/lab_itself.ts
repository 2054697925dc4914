/**
 * `peers` (the lab measuring itself): our h2c client, the native load engine
 * and `h2load` against the same `nghttpd` (on the server CPU), at 1 and 64
 * streams in flight on one connection and at 8 connections × 64 streams
 * (native engine and h2load only), in one run. Each row is split into windows; a sample is the time per completed
 * request in one window (1 / throughput), so every row gets a median and a
 * bootstrap CI the same way. A raw `fetch` row (same HTTP client as ours,
 * without the SBI headers and timeout) separates the cost of the runtime's
 * HTTP stack from the cost of our client layer.
 */
import { Recorder } from "./recorder.ts";
import { onServerCpu, placement } from "./affinity.ts";
import { runLoad } from "../transports/load/mod.ts";
import type { EngineName } from "./schema.ts";
import { sampleOperation, type SamplingPlan } from "./sampler.ts";
import type { ResultRow } from "./schema.ts";
import { makeRow, type ScenarioContext } from "./scenarios/context.ts";

/** Connections × streams compared with h2load (the SBI client and fetch rows: one connection only). */
export const PEER_SHAPES = [
  { connections: 1, streams: 1 },
  { connections: 1, streams: 64 },
  { connections: 8, streams: 64 },
];

/** Raised when a peer tool is missing or misbehaves. */
export class PeerError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "PeerError";
  }
}

async function which(tool: string): Promise<boolean> {
  try {
    const out = await new Deno.Command(tool, {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    }).output();
    return out.success;
  } catch {
    return false;
  }
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      c.close();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new PeerError(`nghttpd did not listen on port ${port} within ${timeoutMs} ms`);
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

/** The peers scenario (see the module comment). */
export async function peersScenario(ctx: ScenarioContext): Promise<ResultRow[]> {
  const missing = [];
  if (!(await which("nghttpd"))) missing.push("nghttpd (apt-get install nghttp2-server)");
  if (!(await which("h2load"))) missing.push("h2load (apt-get install nghttp2-client)");
  if (missing.length) {
    ctx.notes.push(`The peers comparison was skipped: missing ${missing.join(" and ")}.`);
    return [];
  }
  const size = ctx.sizes[0];
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
  const url = `http://127.0.0.1:${port}`;
  const rows: ResultRow[] = [];
  const windows = ctx.config.quick ? 3 : 5;
  const windowMs = Math.max(200, ctx.plan.sampleMs / windows);
  try {
    await waitForPort(port, 10_000);
    const { createClient } = await import("../transports/mod.ts");
    const client = await createClient("h2c", url, { timeoutMs: 10_000 });
    const raw = Deno.createHttpClient({ http1: false, http2: true });
    const ours = async () => {
      const r = await client.request({ path: "/payload" });
      if (r.status !== 200 || r.body.length !== size) {
        throw new PeerError(`nghttpd answered ${r.status}`);
      }
    };
    const plain = async () => {
      const r = await fetch(`${url}/payload`, { client: raw });
      const b = await r.arrayBuffer();
      if (r.status !== 200 || b.byteLength !== size) {
        throw new PeerError(`nghttpd answered ${r.status}`);
      }
    };
    try {
      const ratios: string[] = [];
      for (const { connections, streams } of PEER_SHAPES) {
        const shape = { connections, streams };
        if (connections === 1) {
          for (const [name, op] of [["sbilab client", ours], ["Deno fetch", plain]] as const) {
            const rec = new Recorder();
            let errors = 0;
            for (let w = 0; w < windows; w++) {
              const plan: SamplingPlan = {
                warmupMs: w === 0 ? ctx.plan.warmupMs : 0,
                sampleMs: windowMs,
              };
              const r = await sampleOperation(op, plan, streams, {
                clock: ctx.clock,
                signal: ctx.signal,
                onProgress: (f) => ctx.onProgress(`${name} ${streams} streams`, (w + f) / windows),
              });
              errors += r.errors;
              rec.record((r.elapsedMs * 1e6) / r.samples.count);
            }
            const engine = name === "sbilab client" ? "sbi" : "peer";
            rows.push(peerRow(name, engine, shape, size, rec, errors));
            ctx.onRow(rows.at(-1)!);
          }
        }
        const native = new Recorder();
        let nativeErrors = 0;
        for (let w = 0; w < windows; w++) {
          ctx.onProgress(`native engine ${connections}×${streams}`, w / windows);
          const r = await runLoad({
            protocol: "h2",
            host: "127.0.0.1",
            port,
            headers: [
              [":method", "GET"],
              [":scheme", "http"],
              [":authority", `127.0.0.1:${port}`],
              [":path", "/payload"],
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
          shape,
          size,
          native,
          nativeErrors,
        );
        rows.push(nativeRow);
        ctx.onRow(nativeRow);
        const rec = new Recorder();
        let failed = 0;
        for (let w = 0; w < windows; w++) {
          ctx.onProgress(`h2load ${connections}×${streams}`, w / windows);
          const warm = w === 0 ? Math.max(100, Math.round(ctx.plan.warmupMs)) : 0;
          const args = [
            "-c",
            String(connections),
            "-t",
            "1",
            "-m",
            String(streams),
            "-D",
            `${Math.round(windowMs)}ms`,
          ];
          if (warm) args.push(`--warm-up-time=${warm}ms`);
          args.push(`${url}/payload`);
          const out = await new Deno.Command("h2load", { args, stdout: "piped", stderr: "piped" })
            .output();
          const s = parseH2loadOutput(new TextDecoder().decode(out.stdout));
          failed += s.failed;
          if (s.succeeded < 1 || s.reqPerSec <= 0) {
            throw new PeerError("h2load completed no request");
          }
          rec.record(1e9 / s.reqPerSec);
        }
        const h2loadRow = peerRow("h2load", "peer", shape, size, rec, failed);
        rows.push(h2loadRow);
        ctx.onRow(h2loadRow);
        ratios.push(
          `${connections}×${streams}: ${
            (nativeRow.requestsPerSecond! / h2loadRow.requestsPerSecond!).toFixed(2)
          }×`,
        );
      }
      ctx.notes.push(
        `Native engine ÷ h2load req/s (medians of ${windows} windows each, same nghttpd): ${
          ratios.join(", ")
        }.`,
      );
    } finally {
      await client.close();
      raw.close();
    }
  } finally {
    try {
      nghttpd.kill("SIGTERM");
    } catch {
      // exited
    }
    await nghttpd.status;
    await Deno.remove(docs, { recursive: true }).catch(() => {});
  }
  return rows;
}

function peerRow(
  name: string,
  engine: EngineName,
  shape: { connections: number; streams: number },
  size: number,
  rec: Recorder,
  errors: number,
): ResultRow {
  const { connections, streams } = shape;
  const key = connections === 1 ? String(streams) : `${connections}x${streams}`;
  const row = makeRow({
    id: `peers/${name.replace(/\s+/g, "-")}/${size}/${key}`,
    scenario: "peers",
    transport: name,
    engine,
    label: `GET ${size} B from nghttpd, ${
      connections === 1 ? "" : `${connections} connections × `
    }${streams} stream${streams > 1 ? "s" : ""} in flight (time per request)`,
    sizeBytes: size,
    concurrency: connections * streams,
    errors,
  }, rec.finish());
  row.requestsPerSecond = 1e9 / row.estimate.median;
  return row;
}
