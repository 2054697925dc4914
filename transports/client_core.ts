/**
 * What the native h2 and h3 clients share, whatever the protocol: one
 * connection at a time, reopened on the next request once it is dead or told
 * to go away; a per-request timeout that rejects with `TimeoutError` (one
 * timer structure for every pending request, see `request_timers.ts`); the
 * default timeout; the table of requests waiting on a stream; an idempotent
 * `close()`. Each protocol keeps its own session (how a connection is opened,
 * fed, and how a request becomes a stream) behind {@linkcode CoreSession}.
 */
import { type ClientResponse, TimeoutError, TransportError } from "./types.ts";
import { RequestTimers, sharedRequestTimers, TimerEntry } from "./request_timers.ts";
import { sbiRequestHeaders } from "./sbi_headers.ts";
import type { ClientRequest } from "./types.ts";

/** Time a request may take when neither it nor the client sets one, ms. */
export const DEFAULT_TIMEOUT_MS = 5000;

/** The timeout of one request: its own, else the client's, else {@linkcode DEFAULT_TIMEOUT_MS}. */
export function requestTimeoutMs(
  req: { timeoutMs?: number },
  options: { timeoutMs?: number },
): number {
  return req.timeoutMs ?? options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
}

/**
 * The header fields one request sends: the caller's merged with the SBI
 * headers, reported to the request's `onRequestHeaders` when it has one.
 * Every client builds its header list through this.
 */
export function requestHeadersFor(
  req: ClientRequest,
  timeoutMs: number,
  nfType: string | undefined,
): Record<string, string> {
  const headers = sbiRequestHeaders(req.headers, { timeoutMs, nfType });
  if (req.onRequestHeaders !== undefined) req.onRequestHeaders(headers);
  return headers;
}

/** A request waiting for its response; settling it more than once does nothing. */
export interface PendingRequest {
  resolve(r: ClientResponse): void;
  reject(e: Error): void;
}

/** A request whose timer runs, as {@linkcode timedRequest} returns it. */
export interface TimedRequest {
  /** Settles with the response, the error, or `TimeoutError`. */
  promise: Promise<ClientResponse>;
  /** Settles `promise` (once) and stops the timer. */
  pending: PendingRequest;
  /** True once `promise` is settled (answered, failed or timed out). */
  settled(): boolean;
}

/** One pending request: its promise, its place among the timers, its cancel hook. */
class TimedEntry extends TimerEntry implements TimedRequest, PendingRequest {
  promise: Promise<ClientResponse>;
  pending: PendingRequest = this;
  #resolve!: (r: ClientResponse) => void;
  #reject!: (e: Error) => void;
  #done = false;
  #timers: RequestTimers;
  #timeoutMs: number;
  #onTimeout: () => void;

  constructor(timers: RequestTimers, timeoutMs: number, onTimeout: () => void) {
    super();
    this.promise = new Promise<ClientResponse>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#timers = timers;
    this.#timeoutMs = timeoutMs;
    this.#onTimeout = onTimeout;
    timers.add(this, timeoutMs);
  }

  /** An arrow, so `const { settled } = timedRequest(…)` keeps working. */
  readonly settled = (): boolean => this.#done;

  resolve(r: ClientResponse): void {
    if (this.#done) return;
    this.#done = true;
    this.#timers.remove(this);
    this.#resolve(r);
  }

  reject(e: Error): void {
    if (this.#done) return;
    this.#done = true;
    this.#timers.remove(this);
    this.#reject(e);
  }

  expire(): void {
    if (this.#done) return;
    this.#done = true;
    this.#onTimeout();
    this.#reject(new TimeoutError(this.#timeoutMs));
  }
}

/**
 * Starts a request's timeout among `timers` (default: the one structure all
 * clients of the process share, see {@linkcode RequestTimers}): `pending`
 * settles `promise` once and stops the timeout; when the timeout passes
 * first, `onTimeout` runs (to cancel the stream) and the promise rejects
 * with `TimeoutError`.
 */
export function timedRequest(
  timeoutMs: number,
  onTimeout: () => void,
  timers: RequestTimers = sharedRequestTimers,
): TimedRequest {
  return new TimedEntry(timers, timeoutMs, onTimeout);
}

/** Slots of a {@linkcode PendingStreams} at first and at most (powers of two). */
const PENDING_SLOTS_MIN = 64;
const PENDING_SLOTS_MAX = 1 << 14;

/**
 * The requests of one connection that wait on an open stream, by stream id.
 * A connection opens its streams in rising id order and most answers come in
 * about that order, so a request sits in the slot its id names (id modulo the
 * slot count): adding and taking one writes two array cells. The slots double
 * when a live request holds the slot a new one needs, up to
 * {@linkcode PENDING_SLOTS_MAX}; past that (one request left waiting while
 * thousands of later ones came and went) the newcomer waits in a `Map`. A
 * `Map` for every request would add and delete a key per request, and once
 * its table is in the old generation each rehash leaves garbage there that
 * only a full collection frees (about 50 bytes a request).
 */
export class PendingStreams<P extends PendingRequest = PendingRequest> {
  #ids: number[] = new Array(PENDING_SLOTS_MIN).fill(-1);
  #reqs: (P | undefined)[] = new Array(PENDING_SLOTS_MIN).fill(undefined);
  #overflow = new Map<number, P>();
  #size = 0;

  /** Requests still waiting. */
  get size(): number {
    return this.#size;
  }

  /** Records the request sent on stream `id` (a whole number ≥ 0, not already waiting). */
  add(id: number, p: P): void {
    let slot = id % this.#ids.length;
    while (this.#ids[slot] !== -1 && this.#ids.length < PENDING_SLOTS_MAX) {
      this.#grow();
      slot = id % this.#ids.length;
    }
    if (this.#ids[slot] === -1) {
      this.#ids[slot] = id;
      this.#reqs[slot] = p;
    } else {
      this.#overflow.set(id, p);
    }
    this.#size++;
  }

  /** Forgets stream `id`; false when it was not waiting. */
  delete(id: number): boolean {
    return this.take(id) !== undefined;
  }

  /** Removes and returns the request of stream `id`, for the event that settles it. */
  take(id: number): P | undefined {
    const slot = id % this.#ids.length;
    let p: P | undefined;
    if (this.#ids[slot] === id) {
      p = this.#reqs[slot];
      this.#ids[slot] = -1;
      this.#reqs[slot] = undefined;
    } else if (this.#overflow.size) {
      p = this.#overflow.get(id);
      if (p) this.#overflow.delete(id);
    }
    if (p) this.#size--;
    return p;
  }

  /** Removes and returns every waiting request, oldest (lowest stream id) first. */
  drain(): P[] {
    const all: [number, P][] = [...this.#overflow];
    for (let i = 0; i < this.#ids.length; i++) {
      if (this.#ids[i] !== -1) all.push([this.#ids[i], this.#reqs[i]!]);
    }
    this.#ids.fill(-1);
    this.#reqs.fill(undefined);
    this.#overflow.clear();
    this.#size = 0;
    return all.sort((a, b) => a[0] - b[0]).map((e) => e[1]);
  }

  /** Rejects every waiting request with `err` (a failed connection). */
  rejectAll(err: Error): void {
    for (const p of this.drain()) p.reject(err);
  }

  /** Doubles the slots, each waiting request moving to the slot its id names now. */
  #grow(): void {
    const ids = this.#ids, reqs = this.#reqs;
    this.#ids = new Array(ids.length * 2).fill(-1);
    this.#reqs = new Array(ids.length * 2).fill(undefined);
    for (let i = 0; i < ids.length; i++) {
      if (ids[i] === -1) continue;
      const slot = ids[i] % this.#ids.length;
      this.#ids[slot] = ids[i];
      this.#reqs[slot] = reqs[i];
    }
  }
}

/** One connection of a protocol, as the core drives it. */
export interface CoreSession {
  /** No new requests: closed, failed or told to go away. */
  readonly unusable: boolean;
  /** Streams the native state still holds. */
  readonly streamCount: number;
  /** Shuts the connection and frees it; rejects what still waits. */
  close(): Promise<void>;
}

/** Hooks of {@linkcode ClientCore}. */
export interface ClientCoreOptions<S extends CoreSession> {
  /** Runs first in `close()`, to cut short a connection attempt. Default: nothing. */
  onClosing?: () => void;
  /** Runs in `close()` with the open session just before it is closed. Default: nothing. */
  onDetach?: (session: S) => void;
}

/**
 * One connection per client: `session()` returns the open one, or opens one
 * (one attempt at a time) when there is none or it became unusable.
 */
export class ClientCore<S extends CoreSession> {
  #connect: () => Promise<S>;
  #options: ClientCoreOptions<S>;
  #session: S | undefined;
  #lastSession: S | undefined;
  #connecting: Promise<S> | undefined;
  #closed = false;

  constructor(connect: () => Promise<S>, options: ClientCoreOptions<S> = {}) {
    this.#connect = connect;
    this.#options = options;
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The open session, if any. */
  get current(): S | undefined {
    return this.#session;
  }

  /** The open session, else the last one (kept after close), else undefined. */
  get last(): S | undefined {
    return this.#lastSession;
  }

  /** Streams the open session still holds (for tests and diagnostics). */
  get openStreams(): number {
    return this.#session?.streamCount ?? 0;
  }

  /**
   * The usable session, synchronously when one is open; else a new
   * connection (rejecting with `TransportError` when it fails or the client
   * closes meanwhile).
   */
  session(): S | Promise<S> {
    if (this.#session && !this.#session.unusable) return this.#session;
    if (this.#connecting) return this.#connecting;
    const old = this.#session;
    this.#session = undefined;
    if (old) void old.close();
    this.#connecting = this.#connect().then(
      (s) => {
        this.#connecting = undefined;
        if (this.#closed) {
          void s.close();
          throw new TransportError("Client is closed");
        }
        this.#session = this.#lastSession = s;
        return s;
      },
      (err) => {
        this.#connecting = undefined;
        throw err;
      },
    );
    return this.#connecting;
  }

  /** Closes the open session (waiting for a connection attempt to end first). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#options.onClosing?.();
    const s = this.#session ??
      (this.#connecting ? await this.#connecting.catch(() => undefined) : undefined);
    if (this.#session) this.#options.onDetach?.(this.#session);
    this.#session = undefined;
    await s?.close();
  }
}
