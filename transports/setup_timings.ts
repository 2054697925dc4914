/**
 * The set-up phases of a connection's first request, recorded as they happen
 * by a native client's connection (see {@linkcode SetupTimings}).
 */
import type { SetupTimings } from "./types.ts";

/** Marks phase ends on a monotonic clock; each mark counts once. */
export class SetupRecorder {
  #now: () => number;
  #t0: number;
  #connect: number | undefined;
  #tls: number | undefined;
  #sent: number | undefined;
  #first: number | undefined;
  #total: number | undefined;

  /** Starts the clock (the client begins connecting). `now` defaults to `performance.now`. */
  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
    this.#t0 = now();
  }

  /** The transport is up (TCP connected, or the server's first QUIC datagram arrived). */
  connected(): void {
    this.#connect ??= this.#now();
  }

  /** The TLS handshake completed. */
  tlsDone(): void {
    this.#tls ??= this.#now();
  }

  /** The first request went out. */
  requestSent(): void {
    this.#sent ??= this.#now();
  }

  /** Bytes came in; the first after the request is its first byte. */
  received(): void {
    if (this.#sent !== undefined) this.#first ??= this.#now();
  }

  /**
   * The first bytes of the response came `agoMs` before now (for a module
   * that timestamps them itself on its own clock, where datagrams that are
   * not the response, such as retransmitted handshake packets, also come in:
   * the age, read now, carries its time over to this clock).
   */
  firstByteAgo(agoMs: number): void {
    if (this.#sent !== undefined) this.#first ??= this.#now() - agoMs;
  }

  /** The first request's response is complete. */
  responseComplete(): void {
    if (this.#sent !== undefined) this.#total ??= this.#now();
  }

  /** The phases, once the first response is complete; else undefined. */
  timings(): SetupTimings | undefined {
    if (this.#total === undefined || this.#connect === undefined) return undefined;
    const since = (t: number) => t - this.#t0;
    return {
      connectMs: since(this.#connect),
      ...(this.#tls !== undefined ? { tlsMs: since(this.#tls) } : {}),
      // A first byte timed by the module inside the datagram that brought the transport up is
      // not earlier than that datagram.
      firstByteMs: since(Math.max(this.#first ?? this.#total, this.#connect)),
      totalMs: since(this.#total),
    };
  }
}
