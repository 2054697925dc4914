/**
 * A native load engine run from TypeScript: the plan goes in, the module's
 * worker threads issue every request on their own sockets, TypeScript polls a
 * 64-byte progress record now and then and reads the result and histograms
 * back at the end. No JavaScript runs per request.
 */
import * as hdr from "hdr-histogram-js";
import { loadH2Library } from "../transports/h2/loader.ts";
import { loadH3Library } from "../transports/h3/loader.ts";
import { type LoadEngineCalls, loadEngineCalls } from "../transports/native/load_engine_symbols.ts";
import { encodePlan, type LoadPlan, type LoadProtocol } from "./plan.ts";
import {
  decodePairs,
  decodeResult,
  histogramFromPairs,
  type LoadResult,
  summarize,
} from "./result.ts";

/** Raised when the engine's module cannot be loaded or refuses the plan. */
export class LoadEngineError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "LoadEngineError";
  }
}

/** Phases a run goes through. */
export type LoadPhase = "idle" | "warm-up" | "measure" | "drain" | "done";
const PHASES: LoadPhase[] = ["idle", "warm-up", "measure", "drain", "done"];

/** A snapshot of a running engine. */
export interface LoadProgress {
  sent: number;
  completed: number;
  errors: number;
  inFlight: number;
  elapsedNs: number;
  phase: LoadPhase;
  connectionsUp: number;
  connectionsFailed: number;
}

/** The calls one engine makes, whatever its module. */
type Calls = LoadEngineCalls;

/** The engine of the plan's module, opened through the module's one loader and symbol table. */
async function openCalls(protocol: LoadProtocol): Promise<Calls> {
  try {
    return protocol === "h2"
      ? loadEngineCalls((await loadH2Library()).symbols, "sbh2")
      : loadEngineCalls((await loadH3Library()).symbols, "sbh3");
  } catch (err) {
    throw new LoadEngineError((err as Error).message, { cause: err });
  }
}

/** Options for {@linkcode LoadEngine.run}. */
export interface RunOptions {
  /** Called with a snapshot every `intervalMs`. Default: none. */
  onProgress?: (p: LoadProgress) => void;
  /** How often progress is polled, ms. Default 50. */
  intervalMs?: number;
  /** Aborting stops the run early (the result is marked stopped and partial). */
  signal?: AbortSignal;
}

/** One run of a native engine; `close()` (or `using`) frees it. */
export class LoadEngine {
  #calls: Calls;
  #handle: Deno.PointerObject | null;
  #protocol: LoadProtocol;
  #timeoutNs: number;
  #progressBuf = new Uint8Array(64);
  #started = false;

  private constructor(
    calls: Calls,
    handle: Deno.PointerObject,
    protocol: LoadProtocol,
    timeoutNs: number,
  ) {
    this.#calls = calls;
    this.#handle = handle;
    this.#protocol = protocol;
    this.#timeoutNs = timeoutNs;
  }

  /** Checks and encodes the plan and creates an idle engine in the plan's module. */
  static async create(plan: LoadPlan): Promise<LoadEngine> {
    const record = encodePlan(plan);
    const c = await openCalls(plan.protocol);
    const handle = c.new(record, record.length);
    if (!handle) throw new LoadEngineError("The load engine refused the plan");
    return new LoadEngine(c, handle, plan.protocol, (plan.timeoutMs ?? 10_000) * 1e6);
  }

  #h(): Deno.PointerObject {
    if (!this.#handle) throw new LoadEngineError("The load engine is closed");
    return this.#handle;
  }

  /** Starts the worker threads. */
  start(): void {
    if (this.#started) throw new LoadEngineError("The load engine was already started");
    this.#started = true;
    if (this.#calls.start(this.#h()) !== 0) {
      throw new LoadEngineError("Cannot start the load engine");
    }
  }

  /** A snapshot of the counters. */
  progress(): LoadProgress {
    const b = this.#progressBuf;
    this.#calls.progress(this.#h(), b, b.length);
    const v = new DataView(b.buffer);
    const u = (o: number) => Number(v.getBigUint64(o, true));
    return {
      sent: u(0),
      completed: u(8),
      errors: u(16),
      elapsedNs: u(24),
      inFlight: u(32),
      phase: PHASES[u(40)] ?? "done",
      connectionsUp: u(48),
      connectionsFailed: u(56),
    };
  }

  /** Asks the workers to stop issuing and end soon. */
  stop(): void {
    if (this.#handle) this.#calls.stop(this.#handle);
  }

  /** Starts (if needed), waits for the end while reporting progress, and returns the result. */
  async run(options: RunOptions = {}): Promise<LoadResult> {
    if (!this.#started) this.start();
    const interval = options.intervalMs ?? 50;
    const onAbort = () => this.stop();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    if (options.signal?.aborted) this.stop();
    try {
      for (;;) {
        const p = this.progress();
        options.onProgress?.(p);
        if (p.phase === "done") break;
        await new Promise((r) => setTimeout(r, interval));
      }
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
    }
    return this.result();
  }

  /** Joins the workers and decodes the result with both histograms. */
  result(): LoadResult {
    const h = this.#h();
    this.#calls.join(h);
    const need = this.#calls.result(h, null, 0);
    if (need < 0) throw new LoadEngineError(`The load engine has no result (${need})`);
    const buf = new Uint8Array(need);
    this.#calls.result(h, buf, buf.length);
    const base = decodeResult(buf);
    const pairs = [0, 1].map((kind) => {
      const hb = new Uint8Array(256 * 1024);
      const n = this.#calls.histogram(h, kind, hb, hb.length);
      return decodePairs(hb.subarray(0, Math.max(0, n)));
    });
    // A request that timed out counts in the latency at its timeout at least (wrk2 counts
    // late answers at their lateness): a stall must not vanish from the percentiles.
    const timedOut = base.errorsByKind.timeout;
    if (timedOut > 0) { for (const p of pairs) addPair(p, this.#timeoutNs, timedOut); }
    const hists = pairs.map(histogramFromPairs);
    const eb = new Uint8Array(512);
    const en = this.#calls.error(h, eb, eb.length);
    const error = en > 0 ? new TextDecoder().decode(eb.subarray(0, en)) : undefined;
    const out: LoadResult = {
      protocol: this.#protocol,
      ...base,
      timedOut,
      timeoutNs: this.#timeoutNs,
      latency: summarize(hists[0]),
      latencyUncorrected: summarize(hists[1]),
      histograms: {
        corrected: hdr.encodeIntoCompressedBase64(hists[0]),
        uncorrected: hdr.encodeIntoCompressedBase64(hists[1]),
      },
      latencyBuckets: pairs[0],
      ...(error ? { error } : {}),
    };
    return out;
  }

  /** Stops, joins and frees the engine; safe to call twice. */
  close(): void {
    if (!this.#handle) return;
    this.#calls.free(this.#handle);
    this.#handle = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Adds `count` samples of `value` to (value, count) pairs kept in order of value. */
export function addPair(pairs: [number, number][], value: number, count: number): void {
  let i = 0;
  while (i < pairs.length && pairs[i][0] < value) i++;
  if (i < pairs.length && pairs[i][0] === value) pairs[i][1] += count;
  else pairs.splice(i, 0, [value, count]);
}

/** Creates an engine for the plan, runs it to the end and frees it. */
export async function runLoad(plan: LoadPlan, options: RunOptions = {}): Promise<LoadResult> {
  using engine = await LoadEngine.create(plan);
  return await engine.run(options);
}
