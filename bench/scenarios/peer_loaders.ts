/**
 * The peers scenario's loaders, one block each: the SBI client, the native
 * load engine and h2load, each giving one sample per block (ns per request),
 * and the checked, warmed GET the SBI client's arms repeat.
 */
import { runLoad } from "../../load/mod.ts";
import type { SbiClient } from "../../transports/types.ts";
import { sampleOperation, SamplingError } from "../measure/sampler.ts";
import type { BlockResult } from "../measure/rounds.ts";
import type { ScenarioContext } from "./context.ts";

/** Requests each SBI client sends before the rounds (its connection's set-up). */
export const CONNECT_REQUESTS = 20;
/** Untimed start of a block that opens its own connection (h2load, the native engine). */
export const BLOCK_WARMUP_MS = 50;

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

/** Connections × streams of one arm. */
export interface Shape {
  connections: number;
  streams: number;
}

/** A server the h2 arms load, and the path of its GET. */
export interface PeerTarget {
  name: string;
  port: number;
  path: string;
}

/** One block of the SBI client: `streams` requests in flight for `ms`; one sample, ns per request. */
export function sbiBlock(
  ctx: ScenarioContext,
  op: () => Promise<void>,
  streams: number,
): (ms: number) => Promise<BlockResult> {
  return async (ms) => {
    try {
      const r = await sampleOperation(op, { warmupMs: 0, sampleMs: ms }, streams, {
        clock: ctx.clock,
        signal: ctx.signal,
      });
      return { samples: [(r.elapsedMs * 1e6) / r.samples.count], errors: r.errors };
    } catch (err) {
      // A block stalled past its time (fewer than two requests): an empty block, which the
      // round's ratios skip; failing requests still end the run.
      if (err instanceof SamplingError && /^Only [01] successful/.test(err.message)) {
        return { samples: [], errors: 0 };
      }
      throw err;
    }
  };
}

/** One block of the native engine on a fresh set of connections; one sample, ns per request. */
export function engineBlock(
  ctx: ScenarioContext,
  what: string,
  load: Omit<Parameters<typeof runLoad>[0], "durationMs" | "warmupMs">,
): (ms: number) => Promise<BlockResult> {
  return async (ms) => {
    const r = await runLoad({ ...load, durationMs: ms, warmupMs: BLOCK_WARMUP_MS }, {
      signal: ctx.signal,
    });
    if (r.completed < 1) {
      // Nothing failed, nothing finished: the block stalled (a starved machine); an empty block.
      if (r.errors === 0 && !r.error) return { samples: [], errors: 0 };
      throw new PeerError(`${what} completed no request: ${r.error ?? `${r.errors} errors`}`);
    }
    return { samples: [1e9 / r.reqPerSec], errors: r.errors };
  };
}

/** One block of h2load against `target`; one sample, ns per request. */
export function h2loadBlock(
  target: PeerTarget,
  shape: Shape,
): (ms: number) => Promise<BlockResult> {
  return async (ms) => {
    const args = [
      "-c",
      String(shape.connections),
      "-t",
      "1",
      "-m",
      String(shape.streams),
      "-D",
      `${Math.round(ms)}ms`,
      `--warm-up-time=${BLOCK_WARMUP_MS}ms`,
      `http://127.0.0.1:${target.port}${target.path}`,
    ];
    const out = await new Deno.Command("h2load", { args, stdout: "piped", stderr: "piped" })
      .output();
    const s = parseH2loadOutput(new TextDecoder().decode(out.stdout));
    if (s.succeeded < 1 || s.reqPerSec <= 0) {
      if (s.failed === 0) return { samples: [], errors: 0 }; // stalled, as in engineBlock
      throw new PeerError(`h2load completed no request against ${target.name}`);
    }
    return { samples: [1e9 / s.reqPerSec], errors: s.failed };
  };
}

/**
 * The SBI client's GET of `size` bytes from `target`, checked, after
 * {@linkcode CONNECT_REQUESTS} of them (the connection up and warm before the rounds).
 */
export async function warmGet(
  client: SbiClient,
  target: { name: string; path: string },
  size: number,
): Promise<() => Promise<void>> {
  const get = async () => {
    const r = await client.request({ path: target.path });
    if (r.status !== 200 || r.body.length !== size) {
      throw new PeerError(`${target.name} answered ${r.status} with ${r.body.length} bytes`);
    }
  };
  for (let i = 0; i < CONNECT_REQUESTS; i++) await get();
  return get;
}
