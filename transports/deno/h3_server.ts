/**
 * The deno stack's HTTP/3 server: QUIC from Deno itself (`Deno.QuicEndpoint`,
 * quinn with rustls), HTTP/3 framing and QPACK from nghttp3 through the
 * sbdh3 shim, the same handler behind it. Only the QUIC layer differs from
 * the native h3 server.
 *
 * Limits: the body limit (the handler's 413 as soon as a body passes it, then
 * STOP_SENDING), the in-flight body budget (503), a cap on connections (the
 * newest are refused), a handshake timeout, the QUIC idle timeout, 100
 * concurrent request streams per connection (QUIC stream credit), and a stall
 * timeout on responses the peer does not read. Requests that arrive before
 * the handshake completed are 0-RTT: only GET, HEAD and OPTIONS run there,
 * others get 425 Too Early.
 *
 * What Deno's QUIC does not offer: the TLS exporter, session tickets and
 * their lifetime, connection phases, datagram sizes and ECN counts; mutual
 * TLS (no client certificates). The server says so rather than report them.
 */
import { urlHost } from "../origin.ts";
import type { SbiHandler, SbiResponse } from "../../handler/types.ts";
import { headerSectionTooLarge } from "../../handler/problem.ts";
import { resolveTls } from "../tls.ts";
import type { SbiServer, ServerOptions } from "../types.ts";
import { type Responder, ServerCore } from "../server_core.ts";
import { resolveServerLimits, type ServerLimits } from "../server_limits.ts";
import { decodeRequestBlock, ResponseBlockWriter, WIRE_EVENT } from "../native/wire.ts";
import { type FramingEvent, H3Framing } from "./h3_framing.ts";
import { loadDh3Library } from "./h3_loader.ts";
import { H3_CODE, QuicH3Conn } from "./h3_conn.ts";

/** Request streams one connection may have open at once. */
export const MAX_STREAMS = 100;
/** QUIC handshakes the server runs at once; Initials beyond them are dropped. */
const MAX_HANDSHAKES = 32;

/** Options of the quinn h3 server: the shared {@linkcode ServerOptions}; `earlyData` allows 0-RTT. */
export interface QuinnH3ServerOptions extends ServerOptions {
  /** Accept 0-RTT (replay-safe methods only). Default true. */
  earlyData?: boolean;
}

/** Where the core's answers for one connection go; holds their response-budget reservations until their streams close. */
class ConnResponder implements Responder {
  reservedBytes = 0;
  #server: QuinnH3Server;
  conn: QuicH3Conn | undefined;
  /** Bytes reserved per stream, given back when the stream closes. */
  #held = new Map<number, number>();
  constructor(server: QuinnH3Server) {
    this.#server = server;
  }
  respond(streamId: number, response: SbiResponse, reserved = 0): void {
    if (reserved > 0 && this.conn && !this.conn.dead) this.#held.set(streamId, reserved);
    else this.#server.core.releaseResponse(this, reserved);
    if (this.conn) this.#server.respond(this.conn, streamId, response);
  }
  refuse(streamId: number): void {
    this.conn?.cancel(streamId, H3_CODE.EXCESSIVE_LOAD);
  }
  /** The stream is done: its reservation goes back. */
  closed(streamId: number): void {
    const n = this.#held.get(streamId);
    if (n === undefined) return;
    this.#held.delete(streamId);
    this.#server.core.releaseResponse(this, n);
  }
  /** The connection is gone: every reservation goes back. */
  closedAll(): void {
    for (const n of this.#held.values()) this.#server.core.releaseResponse(this, n);
    this.#held.clear();
  }
}

class QuinnH3Server implements SbiServer {
  readonly transport = "h3" as const;
  readonly hostname: string;
  readonly port: number;
  readonly url: string;
  #endpoint: Deno.QuicEndpoint;
  #listener: Deno.QuicListener;
  #core: ServerCore;
  #options: QuinnH3ServerOptions;
  /** The request path, limits and budgets. */
  get core(): ServerCore {
    return this.#core;
  }
  #conns = new Set<QuicH3Conn>();
  /** Connections whose stall timer runs. */
  #watched = new WeakSet<QuicH3Conn>();
  #pending = 0;
  /** Encodes every response's header block into one reused buffer (the framing layer copies it). */
  #writer = new ResponseBlockWriter();
  #closing: Promise<void> | undefined;
  #accepting: Promise<void>;
  #sym: Awaited<ReturnType<typeof loadDh3Library>>["symbols"];

  constructor(
    endpoint: Deno.QuicEndpoint,
    listener: Deno.QuicListener,
    handler: SbiHandler,
    options: QuinnH3ServerOptions,
    symbols: Awaited<ReturnType<typeof loadDh3Library>>["symbols"],
  ) {
    this.#endpoint = endpoint;
    this.#listener = listener;
    this.#core = new ServerCore(handler, options);
    this.#options = options;
    this.#sym = symbols;
    this.hostname = endpoint.addr.hostname;
    this.port = endpoint.addr.port;
    this.url = `https://${urlHost(this.hostname)}:${this.port}`;
    this.#accepting = this.#acceptLoop();
  }

  /** The limits in force (the same, and the same defaults, as every other server's). */
  get limits(): ServerLimits & { maxStreams: number } {
    return { ...this.#core.limits, maxStreams: MAX_STREAMS };
  }

  /** Requests that arrived in 0-RTT so far, and how many were answered 425 Too Early. */
  earlyRequests(): { received: number; tooEarly: number } {
    return this.#core.earlyRequests();
  }

  /** Connections open now. */
  get connectionCount(): number {
    return this.#conns.size;
  }

  async #acceptLoop(): Promise<void> {
    const { maxConnections } = this.#core.limits;
    try {
      for await (const incoming of this.#listener) {
        if (this.#closing || this.#conns.size + this.#pending >= maxConnections) {
          incoming.refuse();
          continue;
        }
        // Handshakes in batches: past MAX_HANDSHAKES at once, an Initial is dropped unanswered
        // (its client sends it again later), so that a flood never crowds out serving.
        if (this.#pending >= MAX_HANDSHAKES) {
          incoming.ignore();
          continue;
        }
        void this.#start(incoming);
      }
    } catch (err) {
      if (!this.#closing) this.#core.onError(err);
    }
  }

  async #start(incoming: Deno.QuicIncoming): Promise<void> {
    this.#pending++;
    const { handshakeTimeoutMs } = this.#core.limits;
    let quic: Deno.QuicConn | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const early = this.#options.earlyData ?? true;
      const accepted = incoming.accept({ alpnProtocols: ["h3"], zeroRtt: early });
      quic = await accepted;
      const handshake = quic.handshake;
      let handshaken = false;
      const done = handshake.then(() => (handshaken = true));
      const late = new Promise<"late">((resolve) => {
        timer = setTimeout(() => resolve("late"), handshakeTimeoutMs);
      });
      const framing = new H3Framing(this.#sym, true, {
        maxBodyBytes: this.#core.limits.maxBodyBytes,
        maxFieldSectionBytes: this.#core.limits.maxHeaderSectionBytes,
      });
      framing.setMaxStreams(MAX_STREAMS);
      const to = new ConnResponder(this);
      const conn: QuicH3Conn = await QuicH3Conn.open(quic, framing, {
        onEvents: (events) => this.#onEvents(to, events, !handshaken),
        onClosed: () => {
          this.#conns.delete(conn);
          to.closedAll();
          this.#core.connectionClosed();
        },
        onStreamClosed: (id) => to.closed(id),
      }, { server: true });
      to.conn = conn;
      this.#conns.add(conn);
      if ((await Promise.race([done, late])) === "late") {
        conn.close(H3_CODE.NO_ERROR, "handshake timed out");
      }
    } catch (err) {
      // a failed handshake ends that connection only
      this.#core.onError(err);
      try {
        quic?.close({ closeCode: H3_CODE.INTERNAL_ERROR, reason: "" });
      } catch {
        // already closed
      }
    } finally {
      clearTimeout(timer);
      this.#pending--;
    }
  }

  #onEvents(to: ConnResponder, events: FramingEvent[], early: boolean): void {
    const conn = to.conn;
    if (!conn) return;
    for (const e of events) {
      if (e.type === WIRE_EVENT.MESSAGE) {
        this.#core.serve(to, e.streamId, decodeRequestBlock, e.block, e.body, early);
      } else if (e.type === WIRE_EVENT.TOO_LARGE) {
        conn.stopReading(e.streamId);
        this.#core.tooLarge(to, e.streamId);
      } else if (e.type === WIRE_EVENT.RESET && e.code === H3_CODE.EXCESSIVE_LOAD) {
        // Its header section passed the cap. Deno's QUIC cannot reset a stream with a code (an
        // aborted stream ends cleanly), so the answer is 431, before the request has ended.
        conn.stopReading(e.streamId);
        this.respond(
          conn,
          e.streamId,
          headerSectionTooLarge(this.#core.limits.maxHeaderSectionBytes),
        );
      } else if (e.type === WIRE_EVENT.RESET) conn.cancel(e.streamId, e.code);
    }
  }

  /** Hands a response to the connection's framing layer (its header block encoded as the native servers encode it). */
  respond(conn: QuicH3Conn, streamId: number, response: SbiResponse): void {
    if (conn.dead) return;
    try {
      const w = this.#writer;
      const length = w.encode(response);
      conn.framing.respondBlock(streamId, w.buffer, length, response.body);
    } catch (err) {
      this.#core.onError(err);
      conn.cancel(streamId, H3_CODE.INTERNAL_ERROR);
      return;
    }
    conn.flush();
    this.#watchStall(conn);
  }

  /**
   * A connection whose peer leaves response bytes unread past the stall
   * timeout is closed: while bytes wait, one timer per connection (not one
   * per response) checks every stall timeout that some were written since.
   */
  #watchStall(conn: QuicH3Conn): void {
    if (this.#watched.has(conn) || conn.queuedBytes === 0) return;
    this.#watched.add(conn);
    const check = (written: number) =>
      setTimeout(() => {
        if (conn.dead || conn.queuedBytes === 0) {
          this.#watched.delete(conn);
        } else if (conn.writtenBytes === written) {
          this.#watched.delete(conn);
          conn.close(H3_CODE.EXCESSIVE_LOAD, "response stalled");
        } else {
          check(conn.writtenBytes);
        }
      }, this.#core.limits.stallTimeoutMs);
    check(conn.writtenBytes);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#listener.stop();
      for (const c of this.#conns) {
        try {
          c.framing.shutdown();
          c.flush();
        } catch {
          // a connection that is already gone
        }
      }
      await this.#core.drain(() => false);
      for (const c of [...this.#conns]) c.close(H3_CODE.NO_ERROR, "server closing");
      this.#endpoint.close();
      await this.#accepting;
    })();
    return this.#closing;
  }
}

/** Starts the quinn HTTP/3 server around `handler` (`tls.cert` and `tls.key` required). */
export async function createDenoH3Server(
  handler: SbiHandler,
  options: QuinnH3ServerOptions = {},
): Promise<
  SbiServer & { readonly limits: QuinnH3Server["limits"]; readonly connectionCount: number }
> {
  if (!options.tls?.cert || !options.tls.key) {
    throw new TypeError("The h3 server needs a certificate and key (tls.cert, tls.key)");
  }
  const tls = await resolveTls(options.tls);
  if (tls.requireClientCert) {
    throw new RangeError(
      "The deno stack's h3 cannot ask for client certificates (Deno's QUIC has no mutual TLS); use the native stack",
    );
  }
  const { symbols } = await loadDh3Library();
  const endpoint = new Deno.QuicEndpoint({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 0,
  });
  const limits = resolveServerLimits(options);
  const listener = endpoint.listen({
    alpnProtocols: ["h3"],
    cert: tls.certPem!,
    key: tls.keyPem!,
    maxIdleTimeout: limits.idleTimeoutMs,
    maxConcurrentBidirectionalStreams: MAX_STREAMS,
    maxConcurrentUnidirectionalStreams: 16,
  });
  return new QuinnH3Server(endpoint, listener, handler, options, symbols);
}
