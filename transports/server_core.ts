/**
 * The server core under every server (the native h2 server, the h3 server and
 * the deno servers), as the client core is under the clients: the one request
 * path from a complete request to the handler's response (body budget,
 * decoding, the 0-RTT gate, the handler and its failures), the limits in force
 * ({@linkcode resolveServerLimits}), the hooks (`onError`, `onTls`) called so
 * that a failing hook never stops a server, the drain that `close()` waits
 * on, the back-off of an accept loop that failed (EMFILE), and giving freed
 * memory back to the system once connections close (heap_return.ts).
 *
 * A transport keeps only what is its own: its sockets, its sessions, how a
 * response is handed to them (a {@linkcode Responder}).
 */
import type { SbiHandler, SbiPeer, SbiRequest, SbiResponse } from "../handler/types.ts";
import {
  bodyTooLarge,
  overloaded,
  systemFailure,
  tooEarly,
  unreadableRequest,
} from "../handler/problem.ts";
import {
  BodyBudgetError,
  type ByteBudget,
  defaultBodyBudget,
  defaultResponseBudget,
} from "./byte_budget.ts";
import type { TlsConnection } from "./tls.ts";
import type { ServerOptions } from "./types.ts";
import { resolveServerLimits, type ServerLimits } from "./server_limits.ts";
import { defaultHeapReturn, mapLargeAllocations } from "./heap_return.ts";

/**
 * Answers a server hands its transport in one turn of the event loop after
 * which they are sent at once rather than at the turn's end. A read that
 * brought many requests has them answered one after another; sending every
 * 32nd answer at once lets the client take the first ones and send its next
 * requests while the rest are answered, so client and server overlap instead
 * of taking turns. A turn with fewer answers still sends them in one pass at
 * its end.
 */
export const EARLY_FLUSH_RESPONSES = 32;

/** Where the core hands a response: one connection of a transport. */
export interface Responder {
  /**
   * Hands `response` to the transport for stream `streamId`; drops it when
   * the connection is gone. `reserved` bytes of the response budget were
   * taken for it: the transport gives them back
   * ({@linkcode ServerCore.releaseResponse}) once it no longer holds the body.
   */
  respond(streamId: number, response: SbiResponse, reserved: number): void;
  /** Resets stream `streamId` (its response could not be reserved); nothing when it is gone. */
  refuse(streamId: number): void;
  /** Response bytes reserved for this connection now (the core keeps the count). */
  reservedBytes: number;
}

/** Responses up to this size may use the last eighth of the response budget. */
export const SMALL_RESPONSE_BYTES = 64 * 1024;

/** Methods served from 0-RTT; others get 425 Too Early (RFC 8470 §5.2). */
const EARLY_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** One server's request path, limits, hooks and drain. */
export class ServerCore {
  /** The limits in force. */
  readonly limits: ServerLimits;
  /** Request-body bytes held by handlers, shared with the process's other servers by default. */
  readonly bodyBudget: ByteBudget;
  /** Response bytes queued for slow peers, shared with the process's other servers by default. */
  readonly responseBudget: ByteBudget;
  #handler: SbiHandler;
  #onError: ((err: unknown) => void) | undefined;
  #onTls: ((conn: TlsConnection) => void) | undefined;
  #inflight = 0;
  #idle: (() => void) | undefined;
  #early = { received: 0, tooEarly: 0 };
  /** Streams reset because their response found no room in the response budget. */
  refusedResponses = 0;

  /** Throws `RangeError` for a limit that is not a positive integer. */
  constructor(handler: SbiHandler, options: ServerOptions = {}) {
    this.#handler = handler;
    this.limits = resolveServerLimits(options);
    this.bodyBudget = options.bodyBudget ?? defaultBodyBudget;
    this.responseBudget = options.responseBudget ?? defaultResponseBudget;
    this.#onError = options.onError;
    this.#onTls = options.onTls;
    mapLargeAllocations();
  }

  /** Requests whose handler has not answered yet. */
  get inflight(): number {
    return this.#inflight;
  }

  /** Requests that arrived in 0-RTT so far, and how many of them were answered 425 Too Early. */
  earlyRequests(): { received: number; tooEarly: number } {
    return { ...this.#early };
  }

  /** Reports an error the transport swallowed to the `onError` hook; a failing hook is ignored. */
  onError(err: unknown): void {
    try {
      this.#onError?.(err);
    } catch {
      // a failing hook must not stop the server
    }
  }

  /** Shows a connection whose TLS handshake completed to the `onTls` hook. */
  tlsEstablished(conn: TlsConnection): void {
    if (!this.#onTls) return;
    try {
      this.#onTls(conn);
    } catch (err) {
      this.onError(err); // a failing hook must not stop the connection
    }
  }

  /** Answers a request whose body passed `maxBodyBytes` (413), without running the handler. */
  tooLarge(to: Responder, streamId: number): void {
    to.respond(streamId, bodyTooLarge(this.limits.maxBodyBytes), 0);
  }

  /** Answers a request whose body the transport could not buffer within the budget (503). */
  overBudget(to: Responder, streamId: number): void {
    to.respond(streamId, overloaded(new BodyBudgetError(this.bodyBudget.limit).message), 0);
  }

  /** The most response bytes one connection may hold reserved: a quarter of the response budget. */
  get connectionShare(): number {
    return Math.floor(this.responseBudget.limit / 4);
  }

  /**
   * Takes `bytes` for a response not yet built, from the response budget and
   * from `to`'s share of it (when the transport has connections); false, and
   * nothing taken, when either is full. A large response (over
   * {@linkcode SMALL_RESPONSE_BYTES}) leaves the last eighth of the budget to
   * small ones, so that clients holding large answers unread never starve
   * the common SBI exchange.
   */
  reserveResponse(to: Responder | undefined, bytes: number): boolean {
    if (!(bytes >= 0)) return false;
    if (to && to.reservedBytes + bytes > this.connectionShare) return false;
    const budget = this.responseBudget;
    if (bytes > SMALL_RESPONSE_BYTES && budget.used + bytes > budget.limit - budget.limit / 8) {
      return false;
    }
    if (!budget.take(bytes)) return false;
    if (to) to.reservedBytes += bytes;
    return true;
  }

  /** Gives back `bytes` reserved for a response of `to` (its transport no longer holds the body). */
  releaseResponse(to: Responder | undefined, bytes: number): void {
    if (bytes <= 0) return;
    this.responseBudget.release(bytes);
    if (to) to.reservedBytes = Math.max(0, to.reservedBytes - bytes);
  }

  /**
   * The one request path. Takes the body from the body budget (503 when it
   * does not fit), decodes `head` and `body` with `decode` (400 when it
   * throws), refuses a method that is not safe when the request came in
   * 0-RTT (`early`: 425 Too Early, the handler never runs it), then runs the
   * handler and hands its response (500 when it fails) to `to`. The body's
   * bytes return to the budget once the handler answered. Never throws.
   */
  serve<H>(
    to: Responder,
    streamId: number,
    decode: (head: H, body: Uint8Array) => SbiRequest,
    head: H,
    body: Uint8Array,
    early = false,
    peer?: SbiPeer,
  ): void {
    const held = body.length;
    if (held > 0 && !this.bodyBudget.take(held)) {
      this.overBudget(to, streamId);
      return;
    }
    let request: SbiRequest;
    try {
      request = decode(head, body);
    } catch (err) {
      this.bodyBudget.release(held);
      this.onError(err);
      to.respond(streamId, unreadableRequest(), 0);
      return;
    }
    if (early) {
      this.#early.received++;
      if (!EARLY_METHODS.has(request.method)) {
        // Replayable: never run it. The client retries after the handshake (RFC 8470 §5.2).
        this.#early.tooEarly++;
        this.bodyBudget.release(held);
        to.respond(streamId, tooEarly(), 0);
        return;
      }
    }
    if (peer) request.peer = peer;
    let reserved = 0;
    request.reserve = (bytes) => {
      if (!this.reserveResponse(to, bytes)) return false;
      reserved += bytes;
      return true;
    };
    this.#inflight++;
    let answer: Promise<SbiResponse>;
    try {
      answer = this.#handler(request);
    } catch (err) {
      answer = Promise.reject(err);
    }
    answer.then(
      (response) => this.#done(to, streamId, response, held, reserved),
      (err) => {
        this.onError(err);
        this.#done(to, streamId, systemFailure(), held, reserved);
      },
    );
  }

  /**
   * Runs the handler for a request the transport decoded and budgeted itself
   * (the deno stack reads bodies as they stream); resolves with its response,
   * or a 500 when it fails, and the response bytes the handler reserved from
   * the response budget (for `to`, when given), which the caller gives back
   * ({@linkcode releaseResponse}) once the body is sent or dropped. A refused
   * response ({@linkcode SbiResponse.refused}) holds none and is counted.
   * Does not release the body's budget.
   */
  async answer(
    request: SbiRequest,
    to?: Responder,
  ): Promise<{ response: SbiResponse; reserved: number }> {
    let reserved = 0;
    request.reserve = (bytes) => {
      if (!this.reserveResponse(to, bytes)) return false;
      reserved += bytes;
      return true;
    };
    this.#inflight++;
    let response: SbiResponse;
    try {
      response = await this.#handler(request);
    } catch (err) {
      this.onError(err);
      response = systemFailure();
    } finally {
      this.#inflight--;
      if (this.#inflight === 0) this.#idle?.();
    }
    if (response.refused) {
      this.refusedResponses++;
      this.releaseResponse(to, reserved);
      reserved = 0;
    }
    return { response, reserved };
  }

  #done(
    to: Responder,
    streamId: number,
    response: SbiResponse,
    held: number,
    reserved: number,
  ): void {
    this.#inflight--;
    this.bodyBudget.release(held);
    if (response.refused) {
      this.refusedResponses++;
      this.releaseResponse(to, reserved);
      to.refuse(streamId);
    } else {
      to.respond(streamId, response, reserved);
    }
    if (this.#inflight === 0) this.#idle?.();
  }

  /** A connection closed and its state was freed: the heap is trimmed soon (heap_return.ts). */
  connectionClosed(): void {
    defaultHeapReturn.released();
  }

  /** Wakes a running `drain()` at once (a connection closed or a stream ended). */
  wake(): void {
    this.#idle?.();
  }

  /**
   * Waits until `busy()` is false (no request in flight counts as busy too)
   * or `limits.drainMs` passed, calling `poke()` after each wake-up (to let
   * connections with nothing left close). Wakes on every handler answer and
   * on `wake()`, else every `pollMs`.
   */
  async drain(busy: () => boolean, poke?: () => void, pollMs = 20): Promise<void> {
    const deadline = performance.now() + this.limits.drainMs;
    // Bounded by the deadline.
    while ((this.#inflight > 0 || busy()) && performance.now() < deadline) {
      const { promise, resolve } = Promise.withResolvers<void>();
      this.#idle = resolve;
      const t = setTimeout(resolve, pollMs);
      await promise;
      clearTimeout(t);
      this.#idle = undefined;
      poke?.();
    }
  }
}

/**
 * The pause before the next accept after accepting failed (EMFILE, ENFILE,
 * ENOMEM, ECONNABORTED): doubling from `firstMs` up to `maxMs`, back to the
 * start after an accept succeeded.
 */
export class AcceptBackoff {
  #first: number;
  #max: number;
  #next: number;
  /** Accept errors survived so far. */
  errors = 0;

  constructor(firstMs = 5, maxMs = 1000) {
    if (!(firstMs > 0) || !(maxMs >= firstMs)) {
      throw new RangeError(`Invalid back-off ${firstMs}..${maxMs} ms`);
    }
    this.#first = firstMs;
    this.#max = maxMs;
    this.#next = firstMs;
  }

  /** Counts a failure; returns how long to wait before trying again, ms. */
  failed(): number {
    this.errors++;
    const wait = this.#next;
    this.#next = Math.min(this.#max, this.#next * 2);
    return wait;
  }

  /** An accept succeeded: the next failure waits the shortest pause again. */
  succeeded(): void {
    this.#next = this.#first;
  }

  /** The error a server reports to `onError` for a failed accept that waits `waitMs`. */
  static error(err: unknown, waitMs: number): Error {
    const why = String((err as Error)?.message ?? err).replace(/^Error: /, "");
    return new Error(`Accepting connections failed: ${why}; retrying in ${waitMs} ms`, {
      cause: err,
    });
  }
}
