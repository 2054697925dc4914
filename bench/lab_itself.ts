/**
 * `peers` (the lab measuring itself): `h2load` and our h2c client, each
 * against `nghttpd` and against our own h2c server (on the run's stack), at
 * 1 and 64 streams in flight on one connection, in one run. h2load against
 * both servers says how our server compares with a C server; our client
 * against h2load on the same server says how much our client adds. Servers
 * sit on the peer CPU, the clients on the measuring one. Each row is split
 * into windows; a sample is the time per completed request in one window
 * (1 / throughput), so every row gets a median and a bootstrap CI the same
 * way.
 */
import { Recorder } from "./recorder.ts";
import { sampleOperation, type SamplingPlan } from "./sampler.ts";
import type { ResultRow } from "./schema.ts";
import { makeRow, payloadPath, type ScenarioContext } from "./scenarios/context.ts";
import { onServerCpu, placement } from "./affinity.ts";

/** Stream levels compared with h2load. */
export const PEER_STREAMS = [1, 64];

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

/** One server the peers scenario loads: its name and the URL of a 256 B-class GET. */
interface PeerTarget {
  name: string;
  url: string;
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
  const [cmd, args] = onServerCpu(await placement(), "nghttpd", [
    "--no-tls",
    "-d",
    docs,
    String(port),
  ]);
  const nghttpd = new Deno.Command(cmd, {
    args,
    stdout: "null",
    stderr: "null",
    stdin: "null",
  }).spawn();
  const targets: PeerTarget[] = [{ name: "nghttpd", url: `http://127.0.0.1:${port}/payload` }];
  const ours = ctx.endpoints.urls.h2c;
  if (ours) {
    targets.push({
      name: `sbilab h2c (${ctx.config.stack ?? "native"})`,
      url: `${ours}${payloadPath(size)}`,
    });
  }
  const rows: ResultRow[] = [];
  const windows = ctx.config.quick ? 3 : 5;
  const windowMs = Math.max(200, ctx.plan.sampleMs / windows);
  try {
    await waitForPort(port, 10_000);
    for (const target of targets) {
      const origin = new URL(target.url).origin;
      const path = target.url.slice(origin.length);
      const client = await ctx.openClient("h2c", origin);
      const op = async () => {
        const r = await client.request({ path });
        if (r.status !== 200 || r.body.length !== size) {
          throw new PeerError(`${target.name} answered ${r.status} with ${r.body.length} bytes`);
        }
      };
      for (const streams of PEER_STREAMS) {
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
            onProgress: (f) =>
              ctx.onProgress(
                `sbilab client → ${target.name}, ${streams} streams`,
                (w + f) / windows,
              ),
          });
          errors += r.errors;
          rec.record((r.elapsedMs * 1e6) / r.samples.count);
        }
        rows.push(peerRow("sbilab client", target.name, streams, size, rec, errors));
        ctx.onRow(rows.at(-1)!);
        rows.push(await h2loadRow(ctx, target, streams, size, windows, windowMs));
        ctx.onRow(rows.at(-1)!);
      }
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

/** h2load against `target` with `streams` in flight on one connection, in `windows` windows. */
async function h2loadRow(
  ctx: ScenarioContext,
  target: PeerTarget,
  streams: number,
  size: number,
  windows: number,
  windowMs: number,
): Promise<ResultRow> {
  const rec = new Recorder();
  let failed = 0;
  for (let w = 0; w < windows; w++) {
    ctx.onProgress(`h2load → ${target.name}, ${streams} streams`, w / windows);
    const warm = w === 0 ? Math.max(100, Math.round(ctx.plan.warmupMs)) : 0;
    const args = ["-c", "1", "-t", "1", "-m", String(streams), "-D", `${Math.round(windowMs)}ms`];
    if (warm) args.push(`--warm-up-time=${warm}ms`);
    args.push(target.url);
    const out = await new Deno.Command("h2load", { args, stdout: "piped", stderr: "piped" })
      .output();
    const s = parseH2loadOutput(new TextDecoder().decode(out.stdout));
    failed += s.failed;
    if (s.succeeded < 1 || s.reqPerSec <= 0) {
      throw new PeerError(`h2load completed no request against ${target.name}`);
    }
    rec.record(1e9 / s.reqPerSec);
  }
  return peerRow("h2load", target.name, streams, size, rec, failed);
}

function peerRow(
  name: string,
  server: string,
  streams: number,
  size: number,
  rec: Recorder,
  errors: number,
): ResultRow {
  const slug = (t: string) => t.replace(/[^a-z0-9]+/gi, "-").replace(/-$/, "");
  const row = makeRow({
    id: `peers/${slug(name)}/${slug(server)}/${size}/${streams}`,
    scenario: "peers",
    transport: name,
    label: `GET ${size} B from ${server}, ${streams} stream${
      streams > 1 ? "s" : ""
    } in flight (time per request)`,
    sizeBytes: size,
    concurrency: streams,
    errors,
  }, rec.finish());
  row.requestsPerSecond = 1e9 / row.estimate.median;
  return row;
}
