/**
 * One connection of the native h2 client (`client.ts` tells the whole
 * design): its TCP socket, its HTTP/2 session in the shim and, over TLS, its
 * TLS session; requests submitted as streams, responses out of the shim's
 * events, output sent on the fd or through Deno's `write()`.
 */
import { type KeyingMaterialExporter, type TlsConnectionInfo } from "../tls.ts";
import { type SetupTimings, TransportError } from "../types.ts";
import { type PendingRequest, PendingStreams } from "../client_core.ts";
import { H2_EVENT, H2Conn } from "./ffi.ts";
import { NATIVE_ERR, nativeErrorName } from "../native/errors.ts";
import { decodeResponseBlock } from "../native/wire.ts";
import { socketFd, tcpMaxSegment } from "../native/nodelay.ts";
import { libc } from "../../lib/libc.ts";
import { SetupRecorder } from "../setup_timings.ts";
import { H2Tls } from "./tls_ffi.ts";
import { TLS_STATE } from "../native/tls_session.ts";

/** Bytes of each connection's read and write buffers. */
export const IO_BUFFER = 256 * 1024;
const MSG_DONTWAIT = 0x40;
const MSG_NOSIGNAL = 0x4000;

/**
 * Requests submitted in one turn of the event loop after which they leave at
 * once instead of at the turn's end. With many streams in flight, the callers
 * of a batch of answers submit their next requests one after another while
 * this thread still hands out the rest of the batch; sending every 16th at
 * once lets the server work on them meanwhile, so client and server overlap
 * instead of taking turns. Fewer than 16 in a turn (one request in flight, a
 * few) still leave in the one send at the turn's end.
 */
export const EARLY_FLUSH_REQUESTS = 16;

/** One TCP connection (with TLS inside the module, or not) and its HTTP/2 session. */
export class Session implements KeyingMaterialExporter {
  #sock: Deno.TcpConn;
  #h2: H2Conn;
  #tls: H2Tls | undefined;
  #onTicket: ((ticket: Uint8Array) => void) | undefined;
  #label: string;
  #setup: SetupRecorder;
  #pending = new PendingStreams();
  #in = new Uint8Array(IO_BUFFER);
  #out = new Uint8Array(IO_BUFFER);
  /** The socket's fd, for writes that need no promise; undefined where it cannot be found. */
  #fd: number | undefined;
  #flushQueued = false;
  /** Requests submitted since the last send pass. */
  #unflushed = 0;
  /** Output may be pending that the running write loop has not pulled yet. */
  #dirty = false;
  #writing: Promise<void> | undefined;
  #reading: Promise<void>;
  #closing: Promise<void> | undefined;
  /** No new requests: closed, failed or told to go away. */
  unusable = false;
  #dead = false;
  #onEvent = this.#event.bind(this);
  #scheduled = () => {
    this.#flushQueued = false;
    this.#flush();
  };

  /** The connection's TCP maximum segment size, read once (undefined where it cannot be read). */
  get tcpMss(): number | undefined {
    if (!this.#mssRead) {
      this.#mssRead = true;
      this.#mss = tcpMaxSegment({ localPort: (this.#sock.localAddr as Deno.NetAddr).port });
    }
    return this.#mss;
  }
  #mss: number | undefined;
  #mssRead = false;

  constructor(
    sock: Deno.TcpConn,
    h2: H2Conn,
    label: string,
    setup: SetupRecorder,
    tls?: H2Tls,
    onTicket?: (ticket: Uint8Array) => void,
  ) {
    this.#setup = setup;
    this.#sock = sock;
    this.#h2 = h2;
    this.#label = label;
    this.#tls = tls;
    this.#onTicket = onTicket;
    this.#fd = socketFd(sock.localAddr as Deno.NetAddr, sock.remoteAddr as Deno.NetAddr);
    this.#reading = this.#readLoop();
    this.#flush(); // client preface and SETTINGS
  }

  /** Pulls pending output (encrypted over TLS) into `out`; returns its length. */
  #pull(out: Uint8Array): number {
    if (!this.#tls) return this.#h2.send(out);
    const n = this.#h2.sendTls(this.#tls, out);
    if (n < 0) {
      this.#fail(new TransportError(`${this.#label} failed: ${this.#tls.errorText()}`));
      return 0;
    }
    return n;
  }

  /** The set-up phases of this connection's first request, once its response is complete. */
  setupTimings(): SetupTimings | undefined {
    return this.#setup.timings();
  }

  /** What the TLS handshake negotiated (undefined on h2c, and once the TLS session is gone). */
  tlsInfo(): TlsConnectionInfo | undefined {
    // A session the peer failed after its handshake (an mTLS server refusing the client's
    // certificate does so after the client's Finished) has nothing to report.
    return this.#tls?.info() ?? undefined;
  }

  exportKeyingMaterial(label: string, context: Uint8Array | undefined, length: number): Uint8Array {
    if (!this.#tls || this.#dead) throw new RangeError("No TLS connection is open");
    return this.#tls.exportKeyingMaterial(label, context, length);
  }

  /** Hands a ticket that arrived to the cache (once per connection). */
  #checkTicket(): void {
    if (!this.#onTicket || !(this.#tls!.state() & TLS_STATE.TICKET)) return;
    const t = this.#tls!.takeTicket();
    if (t) {
      this.#onTicket(t);
      this.#onTicket = undefined;
    }
  }

  /** Submits one request; the caller's timer is already running. */
  submit(
    block: Uint8Array,
    blockLength: number,
    body: Uint8Array | undefined,
    p: PendingRequest,
  ): number {
    if (this.#dead) throw new TransportError(`${this.#label} failed: connection is closed`);
    const id = this.#h2.request(block, blockLength, body);
    if (id < 0) {
      if (id === NATIVE_ERR.INVALID) throw new TypeError("Invalid request header block");
      this.unusable = true;
      throw new TransportError(
        `${this.#label} failed: rejected by the session (${nativeErrorName(id)})`,
      );
    }
    this.#pending.add(id, p);
    this.#setup.requestSent();
    this.#dirty = true;
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
    this.#dirty = true;
    this.#flush();
  }

  /**
   * Writes all pending output: straight into the socket while the kernel
   * takes it (one `send` that never waits, no promise), the rest through
   * Deno's write; passes repeat while output remains.
   */
  #flush(): void {
    if (this.#dead) return;
    if (this.#writing) {
      this.#dirty = true; // the running write loop pulls it
      return;
    }
    this.#unflushed = 0;
    for (;;) {
      this.#dirty = false;
      const n = this.#pull(this.#out);
      if (n === 0 || this.#dead) return;
      const sent = this.#sendNow(n);
      if (sent < n) {
        this.#writing = this.#writeLoop(sent, n);
        return;
      }
      if (n < this.#out.length) return; // a short pull drained the session
    }
  }

  /** Bytes of `out[0, n)` the kernel took at once; 0 when it would wait or fails (Deno's write then says why). */
  #sendNow(n: number): number {
    // #dead is checked by the caller: the socket (and so the fd) is still open.
    if (this.#fd === undefined) return 0;
    const k = libc().send(this.#fd, this.#out, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    return k > 0 ? k : 0;
  }

  async #writeLoop(off: number, n: number): Promise<void> {
    try {
      while (n > 0 && !this.#dead) {
        while (off < n) off += await this.#sock.write(this.#out.subarray(off, n));
        off = 0;
        // A short send drained the session: call again only if a request or
        // cancel came in while the write was pending (or the buffer was full).
        const more = this.#dirty || n === this.#out.length;
        this.#dirty = false;
        n = this.#dead || !more ? 0 : this.#pull(this.#out);
      }
    } catch (err) {
      this.#fail(this.#error("write failed", err));
    } finally {
      this.#writing = undefined;
    }
  }

  async #readLoop(): Promise<void> {
    try {
      for (;;) {
        const n = await this.#sock.read(this.#in);
        if (this.#dead) return;
        if (n === null) {
          this.#fail(new TransportError(`${this.#label} failed: connection closed by the server`));
          return;
        }
        this.#setup.received();
        let ready: number;
        if (this.#tls) {
          ready = this.#h2.recvTls(this.#tls, this.#in, n);
          if (ready === NATIVE_ERR.TLS) {
            this.#fail(new TransportError(`${this.#label} failed: ${this.#tls.errorText()}`));
            return;
          }
          if (this.#onTicket) this.#checkTicket();
        } else {
          ready = this.#h2.recv(this.#in, n);
        }
        if (ready !== 0) this.#h2.poll(this.#onEvent, ready > 0 ? ready : Infinity);
        if (this.#dead) return;
        // What the input asks to send (acknowledgements, window updates) leaves with the
        // requests the callers submit when their responses resolve: one pass for both.
        this.#scheduleFlush();
        if (this.unusable && this.#pending.size === 0) {
          void this.close();
          return;
        }
      }
    } catch (err) {
      this.#fail(this.#error("read failed", err));
    }
  }

  #error(what: string, err: unknown): TransportError {
    const msg = err instanceof Error ? err.message : String(err);
    return new TransportError(`${this.#label} failed: ${what}: ${msg}`, { cause: err });
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
        this.#setup.responseComplete();
        let head;
        try {
          head = decodeResponseBlock(block);
        } catch (err) {
          p.reject(this.#error("sent a malformed response", err));
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

  /** Rejects every pending request and shuts the connection; the session frees itself. */
  #fail(err: Error): void {
    if (this.#dead) return;
    this.unusable = true;
    this.#dead = true;
    this.#pending.rejectAll(err);
    void this.close();
  }

  /** Streams the shim still holds state for. */
  get streamCount(): number {
    return this.#h2.streamCount();
  }

  /** Sends GOAWAY (best effort), closes the socket, waits for both loops, frees the session. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    if (!this.#dead) {
      this.#h2.shutdown();
      await this.#writing?.catch(() => {});
      let n = this.#pull(this.#out);
      if (this.#tls && n < this.#out.length) {
        this.#tls.closeNotify();
        n += this.#pull(this.#out.subarray(n));
      }
      if (n > 0) {
        await Promise.race([
          this.#sock.write(this.#out.subarray(0, n)).catch(() => 0),
          new Promise((r) => setTimeout(r, 100)),
        ]);
      }
      this.#fail(new TransportError(`${this.#label} failed: client is closed`));
    }
    try {
      this.#sock.close();
    } catch {
      // already closed
    }
    await this.#reading;
    await this.#writing?.catch(() => {});
    this.#h2.close();
    this.#tls?.close();
  }
}
