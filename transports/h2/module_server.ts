/**
 * The native h2 server (h2c, or h2 over TLS) with `io: "module"`: the sbh2
 * module opens the listening socket and runs it on its own I/O thread (native/sbh2_loop.c,
 * transports/native/io_loop.ts), which accepts, reads every connection into
 * its session, runs the timers (settings, idle, stall, TCP write stall, the
 * connection cap) and writes; it wakes this thread once per batch of events,
 * and one poll hands out the events of every connection, each with its
 * connection id. Over TLS the thread runs each handshake too; a connection
 * is shown to JavaScript (the `onTls` hook, its peer's subject under mutual
 * TLS) once its handshake completed. Requests go to the same server core as on the runtime path
 * (`server.ts`), answers go back by connection id and leave through one
 * flush per turn of the event loop, on this thread. Every call into the
 * module is made under the loop's lock; `close()` stops the loop before it
 * frees the listener.
 */
import { urlHost } from "../origin.ts";
import type { SbiPeer, SbiResponse } from "../../handler/types.ts";
import { systemFailure } from "../../handler/problem.ts";
import { EARLY_FLUSH_RESPONSES, type Responder, type ServerCore } from "../server_core.ts";
import type { ServerLimits } from "../server_limits.ts";
import { decodeRequestBlock, ResponseBlockWriter, TOO_LARGE, WIRE_EVENT } from "../native/wire.ts";
import { EventPoller } from "../native/event_poller.ts";
import { NATIVE_ERR } from "../native/errors.ts";
import { IoLoop, type IoLoopStats, type NativeIo } from "../native/io_loop.ts";
import { H2_EVENT } from "./ffi.ts";
import { H2_STAT, H2Listener, type H2ServerLimits } from "./server_ffi.ts";
import type { Sbh2Symbols } from "./symbols.ts";
import type { H2TlsConfig } from "./tls_ffi.ts";
import {
  exportKeyingMaterial,
  readPeerSubject,
  readTlsInfo,
  requireTlsInfo,
} from "../native/tls_session.ts";
import { type SbiServer, TransportError } from "../types.ts";

/** A native h2 server (on Deno's sockets or the module's thread), with counters for tests and diagnostics. */
export interface NativeH2Server extends SbiServer {
  /** Connections open now. */
  readonly connectionCount: number;
  /** Accept errors survived so far. */
  readonly acceptErrors: number;
  /**
   * Writes through Deno's `write()`: of output the kernel did not take at
   * once, or of all output where a socket's fd is unknown.
   */
  readonly fallbackWrites: number;
  /** The limits in force. */
  readonly limits: ServerLimits;
  /** Sums one shim counter (`H2_STAT` in server_ffi.ts) over open connections. */
  stat(which: number): number;
  /** Who does the I/O. */
  readonly io: NativeIo;
  /** The module's I/O thread's counters (`io: "module"`), else null. */
  ioStats(): IoLoopStats | null;
}

const decoder = new TextDecoder();

/** A CONNECTED or CLOSED event's body: "host port", then a reason. */
function peerOf(body: Uint8Array): { hostname: string; port: number; rest: string } {
  const [hostname, port, ...rest] = decoder.decode(body).split(" ");
  return { hostname, port: Number(port), rest: rest.join(" ") };
}

/** Bodies from this size on are lent to the module instead of copied (as on the runtime path). */
const LEND_MIN = 4096;

/** One connection the module's thread accepted, as the server core answers it. */
class LoopConnection implements Responder {
  readonly id: number;
  reservedBytes = 0;
  finished = false;
  /** Under mutual TLS, the verified client certificate's subject. */
  peer: SbiPeer | undefined;
  #server: ModuleH2Server;
  /** Lent response bodies by token, kept alive until the module releases them. */
  #lent = new Map<number, Uint8Array>();
  /** Response-budget bytes reserved for lent bodies, by token. */
  #reservedLent = new Map<number, number>();
  #nextToken = 1;

  constructor(server: ModuleH2Server, id: number) {
    this.#server = server;
    this.id = id;
  }

  respond(streamId: number, response: SbiResponse, reserved = 0): void {
    const server = this.#server;
    const core = server.core;
    if (this.finished) {
      core.releaseResponse(this, reserved);
      return;
    }
    const w = server.writer;
    let length;
    try {
      length = w.encode(response);
    } catch (err) {
      core.onError(err); // a header value the wire cannot carry: the handler's fault
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
    const rc = server.listener.respond(this.id, streamId, w.buffer, length, body, token);
    if (rc !== 0 && token) this.#lent.delete(token);
    if (rc === 0 && token && reserved > 0) this.#reservedLent.set(token, reserved);
    else core.releaseResponse(this, reserved);
    server.answered();
  }

  refuse(streamId: number): void {
    if (this.finished) return;
    this.#server.listener.refuse(this.id, streamId);
    this.#server.scheduleFlush();
  }

  /** The module no longer references the body lent with `token`. */
  released(token: number): void {
    this.#lent.delete(token);
    const reserved = this.#reservedLent.get(token);
    if (reserved !== undefined) {
      this.#reservedLent.delete(token);
      this.#server.core.releaseResponse(this, reserved);
    }
  }

  /** The module closed the connection (or the server stopped): lent bodies and their budget go back. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.#lent.clear();
    for (const reserved of this.#reservedLent.values()) {
      this.#server.core.releaseResponse(this, reserved);
    }
    this.#reservedLent.clear();
  }
}

/** The h2 server whose sockets the module's own thread reads and writes. */
export class ModuleH2Server implements NativeH2Server {
  readonly transport: "h2c" | "h2-tls";
  readonly hostname: string;
  readonly port: number;
  readonly url: string;
  readonly core: ServerCore;
  readonly writer = new ResponseBlockWriter();
  readonly listener: H2Listener;
  #limits: H2ServerLimits;
  #tlsConfig: H2TlsConfig | undefined;
  #loop: IoLoop;
  #poller = new EventPoller();
  #conns = new Map<number, LoopConnection>();
  #onEvent = this.#event.bind(this);
  #flushQueued = false;
  /** Answers handed to the module since the last flush. */
  #unflushed = 0;
  /** Events are being handed out. */
  #handing = false;
  #stopped = false;
  #closing: Promise<void> | undefined;
  /** The listener's own counters at close (it is freed then). */
  #final: { acceptErrors: number; fallbackWrites: number; roomMade: number } | undefined;

  /**
   * Starts the module's thread on `listener` (which this server owns from
   * now on, with `limits` and `tlsConfig`, set on the listener already).
   */
  constructor(
    sym: Sbh2Symbols,
    limits: H2ServerLimits,
    listener: H2Listener,
    hostname: string,
    core: ServerCore,
    tlsConfig?: H2TlsConfig,
  ) {
    this.transport = tlsConfig ? "h2-tls" : "h2c";
    this.core = core;
    this.#limits = limits;
    this.#tlsConfig = tlsConfig;
    this.listener = listener;
    this.hostname = hostname;
    this.port = listener.port;
    this.url = `${tlsConfig ? "https" : "http"}://${urlHost(hostname)}:${this.port}`;
    const srv = limits.pointer;
    const ls = listener.pointer;
    this.#loop = new IoLoop(
      sym,
      (wake) => sym.sbh2_server_loop_new(srv, ls, wake),
      () => this.#woken(),
      "the HTTP/2 server",
    );
    listener.guard(this.#loop);
  }

  get io(): NativeIo {
    return "module";
  }

  ioStats(): IoLoopStats | null {
    return this.#loop.stats();
  }

  get limits(): ServerLimits {
    return this.core.limits;
  }

  /** The module's thread left events: hand them out, then send once the handlers that answer at once have. */
  #woken(): void {
    if (this.#stopped) return;
    this.#handOut();
    this.scheduleFlush();
  }

  #handOut(): void {
    this.#handing = true;
    try {
      this.listener.poll(this.#poller, this.#onEvent);
    } catch (err) {
      this.core.onError(err);
    } finally {
      this.#handing = false;
    }
  }

  #event(
    type: number,
    streamId: number,
    code: number,
    block: Uint8Array,
    body: Uint8Array,
    owned: boolean,
    connId: number,
  ): void {
    if (type === WIRE_EVENT.CLOSED) {
      if (connId === 0) {
        // accepting failed (EMFILE and the like); the module pauses and retries
        this.core.onError(new Error(`Accepting connections failed: ${decoder.decode(body)}`));
        return;
      }
      if (code === NATIVE_ERR.TLS) {
        const { hostname, port, rest } = peerOf(body);
        this.core.onError(
          new TransportError(`h2-tls connection from ${hostname}:${port} failed: ${rest}`),
        );
      }
      const conn = this.#conns.get(connId);
      this.#conns.delete(connId);
      conn?.finish();
      this.core.connectionClosed();
      if (this.#conns.size === 0) this.core.wake();
      return;
    }
    let conn = this.#conns.get(connId);
    if (!conn) {
      conn = new LoopConnection(this, connId);
      this.#conns.set(connId, conn);
    }
    if (type === WIRE_EVENT.CONNECTED) {
      if (code === 1) this.#tlsEstablished(conn, body);
      return;
    }
    if (type === H2_EVENT.RELEASED) {
      conn.released(code);
      return;
    }
    if (type === WIRE_EVENT.TOO_LARGE) {
      if (code === TOO_LARGE.BUDGET) this.core.overBudget(conn, streamId);
      else this.core.tooLarge(conn, streamId);
      return;
    }
    if (type !== H2_EVENT.MESSAGE) return;
    // a body in the poller's shared buffer is copied out; an empty one needs no copy
    const own = owned || body.length === 0 ? body : body.slice();
    this.core.serve(conn, streamId, decodeRequestBlock, block, own, false, conn.peer);
  }

  /** A connection's TLS handshake completed: its peer's subject, and the `onTls` hook. */
  #tlsEstablished(conn: LoopConnection, body: Uint8Array): void {
    const calls = this.listener.tlsCalls(conn.id);
    const subject = readPeerSubject(calls);
    if (subject !== undefined) conn.peer = { subject };
    const { hostname, port } = peerOf(body);
    this.core.tlsEstablished({
      remoteAddr: { hostname, port },
      info: () => requireTlsInfo(readTlsInfo(calls)),
      exportKeyingMaterial: (label, context, length) =>
        exportKeyingMaterial(calls, label, context, length),
    });
  }

  /**
   * An answer went to the module: sent at once when it is the turn's
   * {@linkcode EARLY_FLUSH_RESPONSES}th since the last flush (not while events
   * are handed out), else with the turn's flush.
   */
  answered(): void {
    if (++this.#unflushed >= EARLY_FLUSH_RESPONSES && !this.#handing) this.#flush();
    else this.scheduleFlush();
  }

  /** Sends every answer queued in this turn of the event loop in one flush. */
  scheduleFlush(): void {
    if (this.#flushQueued || this.#stopped) return;
    this.#flushQueued = true;
    queueMicrotask(() => {
      this.#flushQueued = false;
      this.#flush();
    });
  }

  /** Sends what is due, then takes what the sending left (released bodies, closes). */
  #flush(): void {
    this.#unflushed = 0;
    if (this.#stopped) return;
    try {
      this.#loop.flush();
    } catch (err) {
      this.core.onError(err);
    }
    this.#handOut();
  }

  /** Connections open now (for tests and diagnostics). */
  get connectionCount(): number {
    return this.listener.stat(H2_STAT.CONNECTIONS);
  }

  /** Accept errors survived so far. */
  get acceptErrors(): number {
    return this.#final?.acceptErrors ?? this.listener.stat(H2_STAT.ACCEPT_ERRORS);
  }

  /** Sends the kernel did not take whole (the rest waited for the socket on the module's thread). */
  get fallbackWrites(): number {
    return this.#final?.fallbackWrites ?? this.listener.stat(H2_STAT.BLOCKED_WRITES);
  }

  /** Idle connections closed to let new ones in. */
  get roomMade(): number {
    return this.#final?.roomMade ?? this.listener.stat(H2_STAT.ROOM_MADE);
  }

  stat(which: number): number {
    return this.listener.stat(which);
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.listener.shutdown();
    this.#flush();
    await this.core.drain(() => this.connectionCount > 0, () => this.#flush());
    this.#stopped = true;
    // the module's thread stops before the listener and the sessions it runs go
    await this.#loop.stop();
    for (const c of this.#conns.values()) c.finish();
    const left = this.#conns.size;
    this.#conns.clear();
    for (let i = 0; i < left; i++) this.core.connectionClosed();
    this.#final = {
      acceptErrors: this.acceptErrors,
      fallbackWrites: this.fallbackWrites,
      roomMade: this.roomMade,
    };
    this.listener.close();
    this.#limits.close();
    this.#tlsConfig?.close();
  }
}
