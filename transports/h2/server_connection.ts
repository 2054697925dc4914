/**
 * One connection of the native h2 server (`server.ts` tells the whole
 * design): its socket, its HTTP/2 session in the shim and, over TLS, its TLS
 * session; requests out of the shim's events into the server core, responses
 * back in (bodies of 4 KiB or more lent), and the output sent on the fd or
 * through Deno's `write()`.
 */
import type { SbiPeer, SbiResponse } from "../../handler/types.ts";
import { systemFailure } from "../../handler/problem.ts";
import { EARLY_FLUSH_RESPONSES, type Responder, type ServerCore } from "../server_core.ts";
import {
  decodeRequestBlock,
  type ResponseBlockWriter,
  TOO_LARGE,
  WIRE_EVENT,
} from "../native/wire.ts";
import { H2_EVENT } from "./ffi.ts";
import { NATIVE_ERR } from "../native/errors.ts";
import type { EventPoller } from "../native/event_poller.ts";
import { requireTlsInfo } from "../native/tls_session.ts";
import { socketFd } from "../native/nodelay.ts";
import { H2_STAT, type H2ServerConn } from "./server_ffi.ts";
import type { H2Tls } from "./tls_ffi.ts";
import { runTlsHandshake } from "./tls_handshake.ts";
import { handshakeGate } from "../work_gate.ts";

/** What a connection uses of the server that accepted it. */
export interface ConnectionHost {
  /** The request path, limits, hooks and drain. */
  readonly core: ServerCore;
  readonly poller: EventPoller;
  readonly writer: ResponseBlockWriter;
  readonly pool: BufferPool;
  /** Writes through Deno's write (for tests and diagnostics). */
  fallbackWrites: number;
  /** The fds of open connections, skipped when looking for a new one's. */
  readonly fds: Set<number>;
  /** Resolves when one more TLS handshake may go to work. */
  handshakeSlot(): Promise<void>;
  /** Gives back the place a resolved {@linkcode ConnectionHost.handshakeSlot} took. */
  handshakeEnded(): void;
  /** Drops a finished connection. */
  forget(conn: Connection): void;
}

const READ_BUFFER = 64 * 1024;
const WRITE_BUFFER = 256 * 1024;
/** Bodies from this size on are lent to the shim instead of copied. */
const LEND_MIN = 4096;

/** Output buffers shared by the connections: only one with a write in flight holds one. */
export class BufferPool {
  #free: Uint8Array<ArrayBuffer>[] = [];
  take(): Uint8Array<ArrayBuffer> {
    return this.#free.pop() ?? new Uint8Array(WRITE_BUFFER);
  }
  give(b: Uint8Array<ArrayBuffer>): void {
    if (this.#free.length < 64) this.#free.push(b);
  }
}

/** One accepted TCP connection (with TLS inside the module, or not) and its HTTP/2 session. */
export class Connection implements Responder {
  #server: ConnectionHost;
  #sock: Deno.TcpConn;
  /** The socket's fd, for sends that need no promise; undefined where it cannot be found. */
  #fd: number | undefined;
  #h2: H2ServerConn;
  #tls: H2Tls | undefined;
  /** No output but the handshake's until it completes. */
  #handshaking: boolean;
  #peer: SbiPeer | undefined;
  #in = new Uint8Array(READ_BUFFER);
  /** Lent response bodies by token, kept alive until the shim releases them. */
  #lent = new Map<number, Uint8Array>();
  /** Response-budget bytes reserved for lent bodies, by token, given back when the shim releases them. */
  #reservedLent = new Map<number, number>();
  reservedBytes = 0;
  #nextToken = 1;
  #flushQueued = false;
  /** Answers handed to the session since the last send pass. */
  #unflushed = 0;
  /** The session's events are being handed out. */
  #polling = false;
  #dirty = false;
  #writing: Promise<void> | undefined;
  /** Sweeps that saw the same write still running, for the stall check. */
  writeSweeps = 0;
  /** When bytes last arrived or a response left (performance.now()), for making room at the cap. */
  lastActive = performance.now();
  /** A write is running. */
  get writing(): boolean {
    return this.#writing !== undefined;
  }
  finished = false;
  #reading: Promise<void>;
  #onEvent = this.#event.bind(this);
  #scheduled = () => {
    this.#flushQueued = false;
    this.flush();
  };

  constructor(server: ConnectionHost, sock: Deno.TcpConn, h2: H2ServerConn, tls?: H2Tls) {
    this.#server = server;
    this.#sock = sock;
    this.#h2 = h2;
    this.#tls = tls;
    this.#handshaking = tls !== undefined;
    this.#fd = socketFd(
      sock.localAddr as Deno.NetAddr,
      sock.remoteAddr as Deno.NetAddr,
      server.fds,
    );
    if (this.#fd !== undefined) server.fds.add(this.#fd);
    this.#reading = this.#readLoop();
    if (!tls) this.flush(); // server SETTINGS (over TLS: after the handshake)
  }

  /**
   * Moves pending output (encrypted over TLS) towards the peer: sent on the
   * fd as far as the kernel takes it at once, else pulled into `out`.
   * Returns the bytes in `out` left for Deno's write, or DONE / CLOSED.
   */
  #pull(out: Uint8Array<ArrayBuffer>): number {
    if (this.#fd !== undefined) return this.#h2.sendFd(this.#tls, this.#fd, out);
    return this.#tls ? this.#h2.sendTls(this.#tls, out) : this.#h2.send(out);
  }

  /** Runs the TLS handshake, then shows the connection to the `onTls` hook; false when it failed. */
  async #handshake(tls: H2Tls): Promise<boolean> {
    const addr = this.#sock.remoteAddr as Deno.NetAddr;
    const out = this.#server.pool.take();
    const pump = {
      recv: (d: Uint8Array, n: number) => this.#h2.recvTls(tls, d as Uint8Array<ArrayBuffer>, n),
      send: (o: Uint8Array) => this.#h2.sendTls(tls, o as Uint8Array<ArrayBuffer>),
    };
    let failure: unknown;
    let slot = false;
    try {
      const label = `h2-tls connection from ${addr.hostname}:${addr.port}`;
      await runTlsHandshake(this.#sock, tls, pump, label, {
        in: this.#in,
        out,
        gate: handshakeGate,
        first: async () => {
          await this.#server.handshakeSlot();
          slot = true;
        },
      });
    } catch (err) {
      failure = err;
    } finally {
      this.#server.pool.give(out);
      if (slot) this.#server.handshakeEnded();
    }
    // The hook sees every established connection, also one whose first bytes after the
    // handshake (in the same read) failed HTTP/2 at once, like a TLS-only probe's close.
    if (tls.established) {
      this.#server.core.tlsEstablished({
        remoteAddr: { hostname: addr.hostname, port: addr.port },
        info: () => requireTlsInfo(tls.info()),
        exportKeyingMaterial: (label, context, length) =>
          tls.exportKeyingMaterial(label, context, length),
      });
    }
    if (failure !== undefined) {
      if (!this.finished) this.#server.core.onError(failure);
      return false;
    }
    const subject = tls.peerSubject();
    if (subject !== undefined) this.#peer = { subject };
    this.#handshaking = false;
    return true;
  }

  get session(): H2ServerConn {
    return this.#h2;
  }

  /** Ends when the socket reaches EOF or fails, or the connection finished. */
  get reading(): Promise<void> {
    return this.#reading;
  }

  async #readLoop(): Promise<void> {
    try {
      if (this.#tls && !(await this.#handshake(this.#tls))) {
        this.finish();
        return;
      }
      // Over TLS: requests that came in the same read as the client's Finished are in the
      // session already; hand them out now, not when the next read arrives (a round trip later).
      if (this.#tls) this.#poll();
      this.scheduleFlush(); // server SETTINGS and answers to what came with the handshake
      while (!this.finished) {
        const n = await this.#sock.read(this.#in);
        if (n === null || this.finished) break;
        this.lastActive = performance.now();
        const ready = this.#tls
          ? this.#h2.recvTls(this.#tls, this.#in, n)
          : this.#h2.recv(this.#in, n);
        if (ready > 0) this.#poll(ready);
        // output may wait (responses of synchronous handlers join it in one write)
        this.scheduleFlush();
        if (ready < 0) break; // the shim closes; the flush above drains its GOAWAY, if any
      }
    } catch {
      // reset by the peer, or closed by finish()
    }
    if (!this.finished) {
      // EOF or a protocol error: write what the shim still has (GOAWAY), then close
      this.flush();
      await this.#writing;
      this.finish();
    }
  }

  /** Hands out the session's events (at most `limit`). */
  #poll(limit?: number): void {
    this.#polling = true;
    try {
      this.#h2.poll(this.#server.poller, this.#onEvent, limit);
    } finally {
      this.#polling = false;
    }
  }

  #event(
    type: number,
    streamId: number,
    code: number,
    block: Uint8Array,
    body: Uint8Array,
    owned: boolean,
  ): void {
    if (type === H2_EVENT.RELEASED) {
      this.#lent.delete(code);
      const reserved = this.#reservedLent.get(code);
      if (reserved !== undefined) {
        this.#reservedLent.delete(code);
        this.#server.core.releaseResponse(this, reserved);
      }
      return;
    }
    const core = this.#server.core;
    if (type === WIRE_EVENT.TOO_LARGE) {
      if (code === TOO_LARGE.BUDGET) core.overBudget(this, streamId);
      else core.tooLarge(this, streamId);
      return;
    }
    if (type !== H2_EVENT.MESSAGE) return;
    // a body in the poller's shared buffer is copied out; an empty one needs no copy
    const own = owned || body.length === 0 ? body : body.slice();
    core.serve(this, streamId, decodeRequestBlock, block, own, false, this.#peer);
  }

  /** Resets a stream whose response found no room; the write follows in this turn of the event loop. */
  refuse(streamId: number): void {
    if (this.finished) return;
    this.#h2.refuse(streamId);
    this.scheduleFlush();
  }

  /**
   * Hands a response to the shim; the write follows in this turn of the event
   * loop. Its `reserved` budget bytes go back when the shim releases the lent
   * body (at once when the body is copied or refused).
   */
  respond(streamId: number, response: SbiResponse, reserved = 0): void {
    if (this.finished) {
      this.#server.core.releaseResponse(this, reserved);
      return;
    }
    const w = this.#server.writer;
    let length;
    try {
      length = w.encode(response);
    } catch (err) {
      // a header value the wire cannot carry: the handler's fault, answered as one
      this.#server.core.onError(err);
      response = systemFailure();
      length = w.encode(response);
    }
    const body = response.body;
    let token = 0;
    if (body.length >= LEND_MIN && body.buffer instanceof ArrayBuffer && !body.buffer.resizable) {
      token = this.#nextToken;
      this.#nextToken = this.#nextToken === 0xffffffff ? 1 : this.#nextToken + 1;
      this.#lent.set(token, body);
    }
    this.lastActive = performance.now();
    const rc = this.#h2.respond(streamId, w.buffer, length, body, token);
    if (rc !== 0 && token) this.#lent.delete(token);
    if (rc === 0 && token && reserved > 0) this.#reservedLent.set(token, reserved);
    else this.#server.core.releaseResponse(this, reserved);
    // Not while events are handed out: the read loop is still reading them.
    if (++this.#unflushed >= EARLY_FLUSH_RESPONSES && !this.#polling) this.flush();
    else this.scheduleFlush();
  }

  scheduleFlush(): void {
    if (this.#flushQueued || this.finished) return;
    this.#flushQueued = true;
    queueMicrotask(this.#scheduled);
  }

  /**
   * Writes all pending output: straight into the socket while the kernel
   * takes it, the rest through Deno's write, one write per pass; passes
   * repeat while output remains.
   */
  flush(): void {
    this.#unflushed = 0;
    if (this.finished || this.#handshaking) return;
    if (this.#writing) {
      this.#dirty = true; // the running write loop pulls it
      return;
    }
    const pool = this.#server.pool;
    const out = pool.take();
    const n = this.#pull(out);
    if (n > 0) {
      this.writeSweeps = 0;
      this.#writing = this.#writeLoop(out, n);
      return;
    }
    pool.give(out);
    if (n === NATIVE_ERR.CLOSED) this.finish();
    else this.#collectReleased();
  }

  /**
   * Takes the module's RELEASED events for lent bodies it finished sending,
   * so that their memory and reserved budget come back now rather than at
   * the connection's next read. Nothing to do (no call) without lent bodies.
   */
  #collectReleased(): void {
    if (this.#lent.size > 0 && !this.finished) this.#poll();
  }

  async #writeLoop(out: Uint8Array<ArrayBuffer>, n: number): Promise<void> {
    try {
      while (n > 0 && !this.finished) {
        let off = 0;
        while (off < n) {
          this.#server.fallbackWrites++;
          off += await this.#sock.write(out.subarray(off, n));
          this.writeSweeps = 0;
        }
        this.#dirty = false;
        n = this.finished ? 0 : this.#pull(out);
      }
      if (n === NATIVE_ERR.CLOSED) this.finish();
    } catch {
      this.finish(); // the peer went away
    } finally {
      this.#server.pool.give(out);
      this.#writing = undefined;
      this.#collectReleased();
      if (this.#dirty && !this.finished) {
        this.#dirty = false;
        this.flush();
      }
    }
  }

  /** Starts a graceful close (GOAWAY); in-flight streams finish first. */
  shutdown(): void {
    this.#h2.shutdown();
    this.flush();
  }

  /** True when no request is in flight on it (nothing is lost by closing it). */
  get quiet(): boolean {
    return this.#h2.stat(H2_STAT.STREAMS) === 0;
  }

  /** Closes the socket and frees the session. Idempotent. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    try {
      this.#sock.close();
    } catch {
      // already closed
    }
    if (this.#fd !== undefined) this.#server.fds.delete(this.#fd);
    this.#h2.close();
    this.#tls?.close();
    this.#lent.clear();
    for (const reserved of this.#reservedLent.values()) {
      this.#server.core.releaseResponse(this, reserved);
    }
    this.#reservedLent.clear();
    this.#server.forget(this);
  }
}
