/**
 * One connection of the native h2 client on the module's own I/O thread
 * (`io: "module"`, native/sbh2_client_loop.c): the module connects the TCP
 * socket, and its thread reads into the HTTP/2 session (and runs the TLS
 * handshake), writes what is due, and wakes this one once per batch for
 * responses, resets, GOAWAY, the session's close and changes of the socket
 * (connected, handshake done, ended, failed). Requests are submitted under
 * the loop's lock and leave in one flush per turn of the event loop.
 * nghttp2 holds back requests past the server's MAX_CONCURRENT_STREAMS; they
 * leave with a later flush once credit came. Errors read as on the runtime
 * path (`client_session.ts`).
 */
import type { KeyingMaterialExporter, TlsConnectionInfo } from "../tls.ts";
import { type SetupTimings, TransportError } from "../types.ts";
import { EARLY_FLUSH_REQUESTS } from "./client_session.ts";
import { type PendingRequest, PendingStreams } from "../client_core.ts";
import { H2_EVENT, type H2Conn } from "./ffi.ts";
import { NATIVE_ERR, NativeError, nativeErrorName } from "../native/errors.ts";
import { decodeResponseBlock } from "../native/wire.ts";
import { tcpMaxSegment } from "../native/nodelay.ts";
import { guardedSymbols, IoLoop, type IoLoopStats } from "../native/io_loop.ts";
import type { SetupRecorder } from "../setup_timings.ts";
import type { H2Tls } from "./tls_ffi.ts";
import type { Sbh2Symbols } from "./symbols.ts";
import { TLS_STATE } from "../native/tls_session.ts";

/** Bits of `sbh2_csock_state` (enum sbh2_csock_state). */
const CSOCK = { CONNECTED: 1, READY: 2, ENDED: 4, FAILED: 8 } as const;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One TCP connection the module opened and runs on its thread, with its HTTP/2 (and TLS) session. */
export class ModuleSession implements KeyingMaterialExporter {
  #sym: Sbh2Symbols;
  #cs: Deno.PointerValue;
  #loop: IoLoop;
  #h2: H2Conn;
  #tls: H2Tls | undefined;
  #onTicket: ((ticket: Uint8Array) => void) | undefined;
  #label: string;
  #setup: SetupRecorder;
  #pending = new PendingStreams();
  #ready = Promise.withResolvers<void>();
  #isReady = false;
  #flushQueued = false;
  #closing: Promise<void> | undefined;
  /** No new requests: closed, failed or told to go away. */
  unusable = false;
  #dead = false;
  /** Why the connection ended, once it did. */
  #failure: Error | undefined;
  #onEvent = this.#event.bind(this);
  /** Requests submitted since the last send pass. */
  #unflushed = 0;
  #scheduled = () => {
    this.#flushQueued = false;
    this.#flush();
  };

  /** Sends what the session holds (one batched send under the loop's lock). */
  #flush(): void {
    this.#unflushed = 0;
    if (!this.#dead) this.#loop.flush();
  }

  /**
   * Starts connecting to `host`:`port` and the thread that runs `h2` (through
   * `tls` when given) over it; {@linkcode ready} settles once requests can go.
   * Takes `h2` and `tls` over: {@linkcode close} frees them.
   */
  constructor(
    sym: Sbh2Symbols,
    h2: H2Conn,
    label: string,
    setup: SetupRecorder,
    host: string,
    port: number,
    tls?: H2Tls,
    onTicket?: (ticket: Uint8Array) => void,
  ) {
    this.#h2 = h2;
    this.#tls = tls;
    this.#label = label;
    this.#setup = setup;
    this.#onTicket = onTicket;
    this.#ready.promise.catch(() => {}); // a failure before anyone awaits it is reported there
    const cs = sym.sbh2_csock_open(encoder.encode(`${host}\0`), port);
    if (cs === null) throw new NativeError(NATIVE_ERR.NOMEM, "Cannot open a socket");
    this.#cs = cs;
    const c = h2.pointer, t = tls?.pointer ?? null;
    try {
      this.#loop = new IoLoop(
        sym,
        (wake) => sym.sbh2_conn_loop_new(c, t, cs, wake),
        this.#woken,
        "the HTTP/2 client",
      );
    } catch (err) {
      sym.sbh2_csock_free(cs);
      throw err;
    }
    this.#sym = guardedSymbols(sym, this.#loop, /^sbh2_csock_(?!free$)/);
    h2.guard(this.#loop);
    tls?.guard(this.#loop);
  }

  /** Resolves once requests can go (h2c connected, TLS handshake done); rejects with why the connection failed. */
  get ready(): Promise<void> {
    return this.#ready.promise;
  }

  /** The loop's counters (for tests and reports). */
  ioStats(): IoLoopStats {
    return this.#loop.stats();
  }

  /** The connection's TCP maximum segment size, read once (undefined where it cannot be read). */
  get tcpMss(): number | undefined {
    if (!this.#mssRead && !this.#dead) {
      this.#mssRead = true;
      const port = this.#sym.sbh2_csock_port(this.#cs);
      this.#mss = port > 0 ? tcpMaxSegment({ localPort: port }) : undefined;
    }
    return this.#mss;
  }
  #mss: number | undefined;
  #mssRead = false;

  /** The set-up phases of this connection's first request, once its response is complete. */
  setupTimings(): SetupTimings | undefined {
    return this.#setup.timings();
  }

  /** What the TLS handshake negotiated (undefined on h2c, and once the TLS session is gone). */
  tlsInfo(): TlsConnectionInfo | undefined {
    return this.#tls?.info() ?? undefined;
  }

  exportKeyingMaterial(label: string, context: Uint8Array | undefined, length: number): Uint8Array {
    if (!this.#tls || this.#dead) throw new RangeError("No TLS connection is open");
    return this.#tls.exportKeyingMaterial(label, context, length);
  }

  /** The socket's failure text (one line). */
  #errorText(): string {
    const b = new Uint8Array(256);
    const n = this.#sym.sbh2_csock_error(this.#cs, b, b.length);
    return n > 0 ? decoder.decode(b.subarray(0, n)) : "";
  }

  /**
   * The thread read something JavaScript must see: the socket's state
   * changed, or the session queued events. Hands them out as the runtime
   * path's read loop does with what it read.
   */
  #woken = (): void => {
    if (this.#dead) return;
    this.#drain();
    if (this.#dead) return;
    this.#scheduleFlush(); // what the input asks to send leaves with the requests its answers bring
    if (this.unusable && this.#pending.size === 0) void this.close();
  };

  /** Reads the socket's state and the session's events. */
  #drain(): void {
    const st = this.#sym.sbh2_csock_state(this.#cs);
    if (st & CSOCK.CONNECTED) this.#setup.connected();
    if (!this.#isReady && (st & CSOCK.READY)) {
      this.#isReady = true;
      if (this.#tls) this.#setup.tlsDone();
      this.#ready.resolve();
    }
    if (this.#h2.poll(this.#onEvent) > 0) this.#setup.received();
    if (this.#onTicket && (this.#tls!.state() & TLS_STATE.TICKET)) {
      const t = this.#tls!.takeTicket();
      if (t) {
        this.#onTicket(t);
        this.#onTicket = undefined;
      }
    }
    if (this.#dead) return;
    if (st & CSOCK.FAILED) {
      this.#fail(new TransportError(`${this.#label} failed: ${this.#errorText()}`));
    } else if (st & CSOCK.ENDED) {
      this.#fail(new TransportError(`${this.#label} failed: connection closed by the server`));
    }
  }

  /** Submits one request; the caller's timer is already running. */
  submit(
    block: Uint8Array,
    blockLength: number,
    body: Uint8Array | undefined,
    p: PendingRequest,
  ): number {
    if (this.#dead) {
      throw this.#failure ?? new TransportError(`${this.#label} failed: connection is closed`);
    }
    const id = this.#h2.request(block, blockLength, body);
    if (id < 0) {
      if (id === NATIVE_ERR.INVALID) throw new TypeError("Invalid request header block");
      // The thread may have closed the session before this thread saw why: read it first.
      this.#drain();
      this.unusable = true;
      throw this.#failure ?? new TransportError(
        `${this.#label} failed: rejected by the session (${nativeErrorName(id)})`,
      );
    }
    this.#pending.add(id, p);
    this.#setup.requestSent();
    if (++this.#unflushed >= EARLY_FLUSH_REQUESTS) this.#flush();
    else this.#scheduleFlush();
    return id;
  }

  /** Flushes once the current turn of the event loop has submitted what it will. */
  #scheduleFlush(): void {
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      queueMicrotask(this.#scheduled);
    }
  }

  /** Forgets a timed-out stream and resets it. */
  cancel(id: number): void {
    if (!this.#pending.delete(id) || this.#dead) return;
    this.#h2.cancel(id);
    this.#loop.flush();
  }

  #event(
    type: number,
    id: number,
    code: number,
    block: Uint8Array,
    body: Uint8Array,
    owned: boolean,
  ): void {
    switch (type) {
      case H2_EVENT.MESSAGE: {
        const p = this.#pending.take(id);
        if (!p) return;
        // the thread read the response's bytes before this wake-up: no later than its completion
        this.#setup.received();
        this.#setup.responseComplete();
        let head;
        try {
          head = decodeResponseBlock(block);
        } catch (err) {
          const msg = err instanceof Error ? err.message : String(err);
          p.reject(
            new TransportError(`${this.#label} failed: sent a malformed response: ${msg}`, {
              cause: err,
            }),
          );
          return;
        }
        p.resolve({
          status: head.status,
          headers: head.headers,
          body: owned ? body : body.slice(),
        });
        return;
      }
      case H2_EVENT.RESET: {
        const p = this.#pending.take(id);
        if (!p) return;
        p.reject(
          new TransportError(
            `${this.#label} failed: stream reset by the server (error 0x${code.toString(16)})`,
          ),
        );
        return;
      }
      case H2_EVENT.GOAWAY:
        this.unusable = true;
        return;
      case H2_EVENT.CLOSED: {
        const text = this.#h2.errorText() || "connection closed";
        const what = code === NATIVE_ERR.PROTO ? "protocol error" : "connection closed";
        this.#fail(new TransportError(`${this.#label} failed: ${what}: ${text}`));
        return;
      }
    }
  }

  /** Ends the connection with `err`: rejects what waits (the connect too) and closes. */
  abort(err: Error): void {
    this.#fail(err);
  }

  #fail(err: Error): void {
    if (this.#dead) return;
    this.unusable = true;
    this.#dead = true;
    this.#failure = err;
    this.#ready.reject(err);
    this.#pending.rejectAll(err);
    void this.close();
  }

  /** Streams the shim still holds state for. */
  get streamCount(): number {
    return this.#h2.streamCount();
  }

  /**
   * Sends GOAWAY and close_notify (best effort, as far as the kernel takes
   * them at once), stops the thread, then closes the socket and frees the
   * sessions. Idempotent.
   */
  close(): Promise<void> {
    if (!this.#closing) {
      const done = Promise.withResolvers<void>();
      this.#closing = done.promise;
      this.#close().then(done.resolve, done.reject);
    }
    return this.#closing;
  }

  async #close(): Promise<void> {
    if (!this.#dead) {
      if (this.#isReady) {
        this.#h2.shutdown();
        this.#loop.flush();
        this.#tls?.closeNotify();
        this.#loop.flush();
      }
      this.#fail(new TransportError(`${this.#label} failed: client is closed`));
    }
    // the thread stops before the socket it reads goes
    await this.#loop.stop();
    this.#sym.sbh2_csock_free(this.#cs);
    this.#h2.close();
    this.#tls?.close();
  }
}
