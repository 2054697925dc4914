/**
 * The stacks-alone arms of `rtt` in interleaved rounds: per transport and
 * size, the native load engine (inside sbilab's module of that transport, in
 * this process) sends the row's GET one at a time to sbilab's server module
 * of the same transport hosted by a plain C loop (bench/native/h2host.c for
 * h2c and h2 over TLS, h3host.c for h3, on the peer CPU). No runtime and no JavaScript run per request on
 * either side, so the arm is what the transports' stacks cost alone, and a
 * row minus its arm is what sbilab and its runtime add.
 *
 * Each block opens one connection, warms it for {@linkcode STACKS_WARMUP_MS}
 * (handshake, congestion window) and then times every request of the block
 * in the engine's histogram (known to within 0.78 % of each value); the
 * block's samples are those times. An arm that cannot start becomes a note.
 */
import { runLoad } from "../../load/mod.ts";
import type { LoadResult } from "../../load/mod.ts";
import { freePort, waitForPort } from "../../lib/host.ts";
import { DEV_PKI_FILES, writeDevPki } from "../../transports/pki.ts";
import { ensureBuilt } from "../../lib/native_build.ts";
import { STACKS_TRANSPORTS } from "../record/floor_lookup.ts";
import { floorId } from "../record/rounds_summary.ts";
import type { BlockResult } from "../measure/rounds.ts";
import { floorFor, type ScenarioContext } from "./context.ts";
import { spawnPeer, startH3Host, stop } from "./peer_servers.ts";
import type { FloorArms } from "./rtt_floor_arms.ts";

/** Untimed start of each block on its fresh connection (handshake, congestion window). */
export const STACKS_WARMUP_MS = 10;

/** How often a block polls the engine for its end (ms): a block ends this close to its time. */
const POLL_MS = 2;

/** A transport a stacks-alone arm runs. */
type StacksTransport = typeof STACKS_TRANSPORTS[number];

/** One host: where it listens and how it is stopped. */
interface Host {
  port: number;
  close(): Promise<void>;
}

/**
 * Starts sbilab's module of `transport` in its C host, answering every GET
 * with `size` bytes (h2 over TLS and h3 with a fresh dev certificate).
 */
async function startHost(transport: StacksTransport, size: number): Promise<Host> {
  if (transport === "h3") {
    const h = await startH3Host(size);
    return { port: h.port, close: () => h.close() };
  }
  const exe = await ensureBuilt("h2host", { quiet: true });
  const dir = transport === "h2-tls"
    ? await Deno.makeTempDir({ prefix: "sbilab-stacks-" })
    : undefined;
  const removeDir = async () => {
    if (dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  let child: Deno.ChildProcess | undefined;
  try {
    const args: string[] = [];
    if (dir) {
      await writeDevPki(dir);
      args.push(`${dir}/${DEV_PKI_FILES.serverCert}`, `${dir}/${DEV_PKI_FILES.serverKey}`);
    }
    const port = freePort();
    child = await spawnPeer(exe, [String(port), String(size), ...args]);
    await waitForPort(port, 10_000);
    const running = child;
    return {
      port,
      close: async () => {
        await stop(running);
        await removeDir();
      },
    };
  } catch (err) {
    if (child) await stop(child);
    await removeDir();
    throw err;
  }
}

/** The engine's plan for one block against `port`, without its duration. */
function plan(transport: StacksTransport, port: number, size: number) {
  const h3 = transport === "h3", tls = transport !== "h2c";
  return {
    protocol: h3 ? "h3" as const : "h2" as const,
    host: "127.0.0.1",
    port,
    // The hosts' dev certificates are not verified: the arm times the stacks, not the trust.
    ...(tls ? { insecure: true } : {}),
    ...(transport === "h2-tls" ? { tls: true } : {}),
    headers: [
      [":method", "GET"],
      [":scheme", tls ? "https" : "http"],
      [":authority", `127.0.0.1:${port}`],
      [":path", `/${size}`],
    ] as [string, string][],
    connections: 1,
    streams: 1,
    timeoutMs: 2000,
  };
}

/**
 * The per-request times of an engine run, from its latency histogram: each
 * bucket's count of its middle value (ns), in ascending order.
 */
export function samplesOfHistogram(pairs: readonly [number, number][]): number[] {
  const out: number[] = [];
  for (const [lowest, count] of pairs) {
    // HdrHistogram at 2 significant digits: 128 sub-buckets per power of two above 256.
    const width = lowest < 256 ? 1 : 2 ** (Math.floor(Math.log2(lowest)) - 7);
    for (let i = 0; i < count; i++) out.push(lowest + width / 2);
  }
  return out;
}

/** One block's result from an engine run: its times, or an empty block with the failures. */
export function blockOfLoad(r: LoadResult): BlockResult & { problem?: string } {
  const samples = samplesOfHistogram(r.latencyBuckets);
  if (r.completed < 1 || samples.length === 0) {
    // Nothing finished: a starved block when nothing failed either, else a failed one.
    if (r.errors === 0 && !r.error) return { samples: [], errors: 0 };
    return { samples: [], errors: Math.max(1, r.errors), problem: r.error ?? `${r.errors} errors` };
  }
  return { samples, errors: r.errors };
}

/**
 * Adds a stacks-alone arm per transport of the run that has a C host
 * ({@linkcode STACKS_TRANSPORTS}) and size: its host started for the whole
 * run (closed with the run's echoes), one engine run per block (of the block's
 * time, or of `blockCount` requests when the run gives one). A host that
 * does not start or answer becomes a note, as does an arm's first failure.
 */
export async function addStacksArms(
  ctx: ScenarioContext,
  a: FloorArms,
  sizes: number[],
  blockCount?: number,
): Promise<void> {
  const transports = ctx.transports.filter((t): t is StacksTransport =>
    (STACKS_TRANSPORTS as readonly string[]).includes(t)
  );
  for (const transport of transports) {
    for (const size of sizes) {
      const what = `The stacks-alone ${transport} arm at ${size} B`;
      let host: Host;
      try {
        host = await startHost(transport, size);
      } catch (err) {
        ctx.notes.push(`${what} was not measured: ${(err as Error).message}.`);
        continue;
      }
      a.echoes.push(host);
      const base = plan(transport, host.port, size);
      // Checked once before the rounds: the engine reaches the host and gets its bytes.
      let check: LoadResult;
      try {
        check = await runLoad({ ...base, requests: 5 });
      } catch (err) {
        ctx.notes.push(`${what} was not measured: ${(err as Error).message}.`);
        continue;
      }
      if (check.completed < 5) {
        ctx.notes.push(
          `${what} was not measured: the engine completed ${check.completed} of 5 requests` +
            `${check.error ? ` (${check.error})` : ""}.`,
        );
        continue;
      }
      const protocol = floorFor(transport);
      const id = floorId({ source: "stacks", protocol, sizeBytes: size, transport });
      let told = false;
      a.floorArms.push({ id, source: "stacks", protocol, size, transport });
      a.arms.push({
        id,
        block: async (ms) => {
          const r = blockOfLoad(
            await runLoad(
              {
                ...base,
                ...(blockCount ? { requests: blockCount } : { durationMs: Math.max(1, ms) }),
                warmupMs: STACKS_WARMUP_MS,
              },
              { signal: ctx.signal, intervalMs: POLL_MS },
            ),
          );
          if (r.problem && !told) {
            told = true;
            ctx.notes.push(`${what} failed in a block: ${r.problem}.`);
          }
          return { samples: r.samples, errors: r.errors };
        },
      });
    }
  }
}
