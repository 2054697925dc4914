/**
 * `peers` (the lab measuring itself): our h2c client and `h2load` against the
 * same `nghttpd`, at 1 and 64 streams in flight on one connection, in one
 * run. Each row is split into windows; a sample is the time per completed
 * request in one window (1 / throughput), so every row gets a median and a
 * bootstrap CI the same way. A raw `fetch` row (same HTTP client as ours,
 * without the SBI headers and timeout) separates the cost of the runtime's
 * HTTP stack from the cost of our client layer.
 */
import { Recorder } from "./recorder.ts";
import { sampleOperation, type SamplingPlan } from "./sampler.ts";
import type { ResultRow } from "./schema.ts";
import { makeRow, type ScenarioContext } from "./scenarios/context.ts";
import { findTool, freePort, waitForPort } from "../transports/host.ts";

/** Stream levels compared with h2load. */
export const PEER_STREAMS = [1, 64];

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
  const docs = await Deno.makeTempDir({ prefix: "sbilab-peers-" });
  await Deno.writeFile(`${docs}/payload`, new Uint8Array(size).fill(0x61));
  const port = freePort();
  const nghttpd = new Deno.Command("nghttpd", {
    args: ["--no-tls", "-d", docs, String(port)],
    stdout: "null",
    stderr: "null",
    stdin: "null",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  const rows: ResultRow[] = [];
  const windows = ctx.config.quick ? 3 : 5;
  const windowMs = Math.max(200, ctx.plan.sampleMs / windows);
  try {
    await waitForPort(port, 10_000).catch((err) => {
      throw new PeerError(`nghttpd did not listen: ${err.message}`, { cause: err });
    });
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
      for (const streams of PEER_STREAMS) {
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
          rows.push(peerRow(name, streams, size, rec, errors));
          ctx.onRow(rows.at(-1)!);
        }
        const rec = new Recorder();
        let failed = 0;
        for (let w = 0; w < windows; w++) {
          ctx.onProgress(`h2load ${streams} streams`, w / windows);
          const warm = w === 0 ? Math.max(100, Math.round(ctx.plan.warmupMs)) : 0;
          const args = [
            "-c",
            "1",
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
        rows.push(peerRow("h2load", streams, size, rec, failed));
        ctx.onRow(rows.at(-1)!);
      }
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
  streams: number,
  size: number,
  rec: Recorder,
  errors: number,
): ResultRow {
  const row = makeRow({
    id: `peers/${name.replace(/\s+/g, "-")}/${size}/${streams}`,
    scenario: "peers",
    transport: name,
    label: `GET ${size} B from nghttpd, ${streams} stream${
      streams > 1 ? "s" : ""
    } in flight (time per request)`,
    sizeBytes: size,
    concurrency: streams,
    errors,
  }, rec.finish());
  row.requestsPerSecond = 1e9 / row.estimate.median;
  return row;
}
