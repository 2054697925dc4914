/**
 * The HTTP/3 server: one UDP socket, one sbh3 server endpoint that creates a
 * QUIC connection per client, and the shared handler behind it. Malformed or
 * hostile datagrams are dropped by the shim; the server keeps serving.
 *
 * Two ways to do the I/O (`io`). `runtime` (the default): the socket is a
 * `Deno.DatagramConn` the shim adopts; one wake-up (one `receive()` through
 * Deno's reactor, on the main thread) is followed by one `io()` call that
 * feeds that datagram, drains every further ready one and sends all output in
 * one batch; the shim's timers are one `setTimeout`, re-armed only when the
 * next deadline moves earlier. `module`: the shim opens the socket and runs
 * it on its own thread (transports/native/io_loop.ts), which receives, runs
 * the timers and answers acknowledgements and handshakes itself, and wakes
 * this thread once per batch of events; answers leave through a flush here.
 */
import { urlHost } from "../origin.ts";
import { DeadlineTimer } from "./deadline_timer.ts";
import type { SbiHandler, SbiPeer, SbiResponse } from "../../handler/types.ts";
import { decodeRequestBlock, ResponseBlockWriter } from "../native/wire.ts";
import { resolveTls, type TlsConnectionInfo } from "../tls.ts";
import type { SbiServer, ServerOptions } from "../types.ts";
import { EARLY_FLUSH_RESPONSES, type Responder, ServerCore } from "../server_core.ts";
import type { ServerLimits } from "../server_limits.ts";
import { NATIVE_ERR } from "../native/errors.ts";
import { H3_EVENT, H3_MSG_EARLY } from "./h3_event.ts";
import type { EventHandler } from "../native/event_poller.ts";
import { H3Config, type H3CongestionControl, type H3QuicVersion } from "./h3_config.ts";
import type { H3DatagramStats } from "./h3_datagram_stats.ts";
import { H3ServerEndpoint } from "./h3_server_endpoint.ts";
import { H3OwnedSocket, H3Socket } from "./h3_socket.ts";
import { IoLoop, type IoLoopStats, type NativeIo, nativeIo } from "../native/io_loop.ts";
import type { Sbh3Symbols } from "./symbols.ts";
import { loadH3Library } from "./loader.ts";
import { MicrotaskDelay, microtaskHops } from "../microtask_delay.ts";
import { systemFailure } from "../../handler/problem.ts";

/**
 * Extra options of the HTTP/3 server, beside the shared {@linkcode ServerOptions}
 * (whose limits it applies as every server does: `idleTimeoutMs` is the QUIC
 * idle timeout, `handshakeTimeoutMs` the QUIC handshake's, `stallTimeoutMs`
 * closes a connection whose held response bytes see no acknowledgement, a
 * body over `maxBodyBytes` is answered 413 as soon as it passes the limit,
 * reading stopping with STOP_SENDING H3_NO_ERROR).
 */
export interface H3ServerOptions extends ServerOptions {
  /**
   * QUIC versions by preference, v1 among them: `["v2draft", "v1"]` moves a
   * peer that offers the v2 draft to it (compatible version negotiation, RFC
   * 9368). RFC 9369's v2 is not in ngtcp2 0.12.1. Default `["v1"]`.
   */
  quicVersions?: H3QuicVersion[];
  /**
   * ECN (RFC 9000 §13.4): mark datagrams ECT(0) while QUIC's validation of
   * the path allows it and report the marks received in ACKs. The first
   * datagram of each wake-up is read through Deno, which hides its TOS byte:
   * it counts as unmarked, so a peer that checks our counts strictly may
   * stop marking (see `exactEcn`). Default true.
   */
  ecn?: boolean;
  /**
   * Read every datagram in the module, each with its ECN mark, so ACK_ECN
   * counts every mark that arrived: the socket's readiness is awaited in the
   * module on one of Deno's blocking threads instead of through Deno's
   * receive, which costs a thread crossing per wake-up. Default false.
   */
  exactEcn?: boolean;
  /**
   * Who reads and writes the socket: `runtime`, Deno's reactor (above), or
   * `module`, the shim's own I/O thread, which reads every datagram with its
   * ECN mark and wakes JavaScript only for complete requests and connection
   * events. Default: the `SBILAB_NATIVE_IO` environment variable, else
   * `runtime`.
   */
  io?: NativeIo;
  /**
   * Validate every new client address with a Retry (RFC 9000 §8.1) and give
   * each client a NEW_TOKEN that skips the Retry next time. Tokens are bound
   * to the client's address and expire (Retry 10 s, NEW_TOKEN 1 h); the key
   * that seals them changes every hour. Costs one round trip per new client
   * without a token. Default false.
   */
  retry?: boolean;
  /**
   * Response body bytes held for one connection (default 64 MiB, never more
   * than `maxQueuedBytes`) and for the whole server (default the limit of
   * `responseBudget`, `DEFAULT_SERVER_LIMITS.maxQueuedResponseBytes`). A
   * response that does not fit waits, in order, until earlier ones are
   * delivered; the first of a connection always fits. A connection whose held
   * bytes see no acknowledgement for `stallTimeoutMs` is closed with
   * H3_EXCESSIVE_LOAD.
   */
  maxQueuedBytesPerConnection?: number;
  maxQueuedBytes?: number;
  /**
   * Largest UDP payload to send, for a path MTU you know (1200..65527; 16384
   * on loopback, 1452 on Ethernet). Used once the client's max_udp_payload_size
   * is known, never above it; a report should name it. Default: standard QUIC,
   * 1200-byte datagrams and path MTU discovery up to 1444.
   */
  maxUdpPayload?: number;
  /** The max_udp_payload_size advertised to clients; larger datagrams are dropped. Default 65527. */
  maxRecvUdpPayload?: number;
  /**
   * Congestion controller of each QUIC connection. Default "host": the same
   * kind as the host's TCP (net.ipv4.tcp_congestion_control: bbr, reno, else
   * cubic), so h3 and h2 cross a lossy link under like controllers.
   */
  congestionControl?: H3CongestionControl;
  /**
   * Accept 0-RTT from resuming clients. A request that arrived in 0-RTT with
   * a method that is not safe (anything but GET, HEAD, OPTIONS) is answered
   * 425 Too Early (RFC 8470) without running the handler. Never under mutual
   * TLS (the client certificate only comes with the handshake). Default true.
   */
  earlyData?: boolean;
  /** How long a 0-RTT ClientHello is remembered to refuse its replay, in ms. Default 10000. */
  antiReplayWindowMs?: number;
}

/** Microtask hops a flush after a read waits for the handlers it started to answer. */
const ANSWER_HOPS = 4;

/** Response bytes one connection holds at most, by default. */
const DEFAULT_CONN_QUEUED_BYTES = 64 * 1024 * 1024;

/** A response that waits for room in the server's send queue. */
interface Blocked {
  streamId: number;
  /** The encoded header block (a copy of the writer's). */
  block: Uint8Array;
  body: Uint8Array;
  /** Response-budget bytes reserved for it, given back when the shim takes its copy or it is dropped. */
  reserved: number;
}

/** The HTTP/3 server's extras beyond the shared contract. */
export interface H3SbiServer extends SbiServer {
  /** The explicit datagram size in force (`maxUdpPayload`), or undefined for standard PMTUD. */
  readonly maxUdpPayload: number | undefined;
  /** Datagram counters over every connection so far (largest sent and received, drops, queued bytes). */
  datagramStats(): H3DatagramStats | null;
  /** Requests that arrived in 0-RTT so far, and how many of them were answered 425 Too Early. */
  earlyRequests(): { received: number; tooEarly: number };

  /** Connections held, including closing ones. */
  readonly connectionCount: number;
  /** Who does the I/O. */
  readonly io: NativeIo;
  /** The module's I/O thread's counters (`io: "module"`), else null. */
  ioStats(): IoLoopStats | null;
  /** Request streams not yet closed, over all connections. */
  readonly openStreams: number;
  /** Answers refused so far for want of room in the response budget (their streams were reset). */
  readonly refusedResponses: number;
  /** The limits in force. */
  readonly limits: ServerLimits;
}

/** One QUIC connection as the server core sees it: where its responses go, and its client's subject. */
class H3Connection implements Responder {
  #server: H3Server;
  readonly connId: number;
  /** The verified client certificate's subject (mutual TLS). */
  peer: SbiPeer | undefined;
  reservedBytes = 0;
  constructor(connId: number, server: H3Server) {
    this.connId = connId;
    this.#server = server;
  }
  respond(streamId: number, response: SbiResponse, reserved = 0): void {
    this.#server.send(this, streamId, response, reserved);
  }
  refuse(streamId: number): void {
    this.#server.refuse(this, streamId);
  }
}

class H3Server implements H3SbiServer {
  readonly transport = "h3" as const;
  readonly maxUdpPayload: number | undefined;
  readonly hostname: string;
  readonly port: number;
  readonly url: string;
  #sock: H3Socket | H3OwnedSocket;
  #ep: H3ServerEndpoint;
  /** The module's I/O thread (`io: "module"`). */
  #loop: IoLoop | undefined;
  #core: ServerCore;
  #timer = new DeadlineTimer(() => {
    if (!this.#stopped) this.#pump();
  });
  #flushQueued = false;
  #reading: Promise<void>;
  #closing: Promise<void> | undefined;
  #stopped = false;
  #received = 0;
  /** The connections that sent a request or completed a handshake, by id. */
  #conns = new Map<number, H3Connection>();
  /** True while #handOut reads events; requests it handed out so far. */
  #handing = false;
  #requests = 0;

  #blocked = new Map<number, Blocked[]>();
  /** Encodes every response's header block into one reused buffer. */
  #writer = new ResponseBlockWriter();

  constructor(
    sock: H3Socket | H3OwnedSocket,
    hostname: string,
    ep: H3ServerEndpoint,
    core: ServerCore,
    maxUdpPayload: number,
    sym: Sbh3Symbols,
  ) {
    this.#sock = sock;
    this.#ep = ep;
    this.#core = core;
    this.hostname = hostname;
    this.maxUdpPayload = maxUdpPayload || undefined;
    this.port = sock.port;
    this.url = `https://${urlHost(hostname)}:${sock.port}`;
    if (sock instanceof H3Socket) {
      this.#reading = this.#readLoop(sock);
      return;
    }
    this.#reading = Promise.resolve();
    const udp = sock.pointer;
    const srv = ep.pointer;
    this.#loop = new IoLoop(
      sym,
      (wake) => sym.sbh3_server_loop_new(srv, udp, wake),
      () => this.#woken(),
      "the HTTP/3 server",
    );
    ep.guard(this.#loop);
  }

  get io(): NativeIo {
    return this.#loop ? "module" : "runtime";
  }

  ioStats(): IoLoopStats | null {
    return this.#loop?.stats() ?? null;
  }

  /**
   * The module's thread took datagrams in and left events: hand them out and
   * send once the handlers that answer within a few microtask hops have
   * answered, as {@linkcode #arrived} does (the thread sent nothing of this
   * batch).
   */
  #woken(): void {
    if (!this.#stopped) this.#dispatch();
  }

  async #readLoop(sock: H3Socket): Promise<void> {
    // Bounded by close(): it stops the loop and closes the socket, which ends the receive.
    while (!this.#stopped) {
      let got;
      try {
        got = await sock.receive();
      } catch (err) {
        // Not expected on an unconnected socket; report it and keep serving, without spinning.
        this.#core.onError(err);
        await new Promise((r) => setTimeout(r, 1));
        continue;
      }
      if (got === null || this.#stopped) break;
      const alone = this.#arrived(got[0], got[1]);
      // The next reads (of an empty socket, most often: system calls) after the answers' send.
      await microtaskHops(ANSWER_HOPS + 2);
      if (alone && !this.#stopped && this.#readBehind() > 0) await microtaskHops(ANSWER_HOPS + 2);
    }
  }

  /**
   * A datagram arrived: take it in, hand out the events, and send once the
   * handlers that answer within a few microtask hops have answered
   * ({@linkcode #flushAfterHandlers}), so a request's acknowledgement leaves
   * with its response in one batch, not a datagram ahead of it. The
   * datagrams behind it are read after that send ({@linkcode #readBehind}):
   * true. An empty `first` (the module reads every datagram itself, or the
   * receive was refused) reads them all now: false.
   */
  #arrived(first: Uint8Array, from: Deno.NetAddr): boolean {
    const alone = first.length > 0;
    try {
      if (alone) {
        this.#ep.recv(first, from.hostname, from.port); // a datagram it drops counts as read
        this.#received++;
      } else {
        this.#received += Math.max(0, this.#ep.ioDeferSend(this.#sock as H3Socket, first, from));
      }
    } catch (err) {
      this.#core.onError(err);
    }
    this.#dispatch();
    return alone;
  }

  /**
   * Reads the datagrams that came behind the last one, once its answers
   * left, and hands them out as {@linkcode #arrived} does; returns how many
   * came in. Read before that send, they delayed it: at one request at a
   * time the read finds nothing (a system call) on every request's path.
   */
  #readBehind(): number {
    let got = 0;
    try {
      got = Math.max(0, this.#ep.drain(this.#sock as H3Socket));
    } catch (err) {
      this.#core.onError(err);
    }
    this.#received += got;
    if (got > 0) this.#dispatch();
    return got;
  }

  /**
   * Requests wait for their answers' flush; anything else due (more of a
   * response the peer's acknowledgement lets out, a handshake flight) leaves now.
   */
  #dispatch(): void {
    if (this.#handOut(false) > 0) this.#flushAfterHandlers();
    else this.#sendDue();
  }

  /** Sends everything due (timers first), receiving nothing: the read loop does that. */
  #sendDue(): void {
    try {
      if (this.#loop) this.#loop.flush();
      else this.#ep.flush(this.#sock as H3Socket);
    } catch (err) {
      this.#core.onError(err);
    }
    this.#handOut();
  }

  /** One round of I/O: receive what is ready, run timers, send all; then hand out the events. */
  #pump(): void {
    try {
      this.#received += Math.max(0, this.#ep.io(this.#sock as H3Socket));
    } catch (err) {
      this.#core.onError(err);
    }
    this.#handOut();
  }

  /**
   * Hands the events out: requests to the core, handshakes to onTls, closes
   * to the books; then offers blocked responses again and, unless `arm` is
   * false (a flush follows that arms it), re-arms the timer. Returns the
   * requests handed out. A call from inside a hook polls nothing: the outer
   * call is still reading the events.
   */
  #handOut(arm = true): number {
    let requests = 0;
    if (!this.#handing) {
      this.#handing = true;
      this.#requests = 0;
      try {
        this.#ep.pollEach(this.#onEvent);
      } finally {
        this.#handing = false;
        requests = this.#requests;
      }
    }
    if (this.#blocked.size && this.#retryBlocked()) this.#scheduleFlush();
    if (arm) this.#arm();
    return requests;
  }

  /** One polled event; its block and body are views into the poller's buffer. */
  #onEvent: EventHandler = (type, streamId, code, block, body, owned, connId) => {
    if (type === H3_EVENT.MESSAGE) {
      this.#requests++;
      const c = this.#conn(connId);
      // a body in the poller's shared buffer is copied out; an empty one needs no copy
      const own = owned || body.length === 0 ? body : body.slice();
      this.#core.serve(
        c,
        streamId,
        decodeRequestBlock,
        block,
        own,
        (code & H3_MSG_EARLY) !== 0,
        c.peer,
      );
    } else if (type === H3_EVENT.CONNECTED) this.#onConnected(connId);
    else if (type === H3_EVENT.TOO_LARGE) this.#core.tooLarge(this.#conn(connId), streamId);
    else if (type === H3_EVENT.CLOSED) {
      this.#ep.forget(connId);
      this.#dropBlocked(connId);
      this.#conns.delete(connId);
      this.#core.connectionClosed();
    }
  };

  #conn(connId: number): H3Connection {
    let c = this.#conns.get(connId);
    if (!c) {
      c = new H3Connection(connId, this);
      this.#conns.set(connId, c);
    }
    return c;
  }

  /** A handshake completed: remember the client's subject and show the connection to `onTls`. */
  #onConnected(connId: number): void {
    const tls = this.#ep.tlsInfo(connId);
    if (!tls) return;
    if (tls.peerSubject) this.#conn(connId).peer = { subject: tls.peerSubject };
    const remote = this.#ep.peer(connId);
    if (!remote) return;
    const ep = this.#ep;
    this.#core.tlsEstablished({
      remoteAddr: { hostname: remote.hostname, port: remote.port },
      info(): TlsConnectionInfo {
        const now = ep.tlsInfo(connId);
        if (!now) throw new RangeError("The HTTP/3 connection is closed");
        return now;
      },
      exportKeyingMaterial: (label, context, length) =>
        ep.exportKeyingMaterial(connId, label, context, length),
    });
  }

  /** Gives back the budget of a connection's waiting responses and forgets them. */
  #dropBlocked(connId: number): void {
    const waiting = this.#blocked.get(connId);
    if (!waiting) return;
    this.#blocked.delete(connId);
    const c = this.#conns.get(connId);
    for (const b of waiting) this.#core.releaseResponse(c, b.reserved);
  }

  /** Resets a request's stream (its response found no room). */
  refuse(conn: H3Connection, streamId: number): void {
    if (this.#stopped) return;
    this.#ep.refuse(conn.connId, streamId);
    this.#scheduleFlush();
  }

  /**
   * Hands a response to the shim (which copies it: its `reserved` budget
   * goes back at once), or queues it behind the connection's waiting ones
   * when there is no room (the budget goes back when it leaves the queue).
   */
  send(conn: H3Connection, streamId: number, response: SbiResponse, reserved: number): void {
    const connId = conn.connId;
    if (this.#stopped) {
      this.#core.releaseResponse(conn, reserved);
      return;
    }
    const w = this.#writer;
    let length;
    try {
      length = w.encode(response);
    } catch (err) {
      // a header value the wire cannot carry: the handler's fault, answered as one
      this.#core.onError(err);
      response = systemFailure();
      length = w.encode(response);
    }
    const waiting = this.#blocked.get(connId);
    if (waiting) {
      waiting.push({ streamId, block: w.buffer.slice(0, length), body: response.body, reserved });
      return;
    }
    // Other negative results mean the stream or connection went away meanwhile.
    const rc = this.#ep.respondBlock(connId, streamId, w.buffer, length, response.body);
    if (rc === NATIVE_ERR.STREAM_BLOCKED) {
      this.#blocked.set(connId, [{
        streamId,
        block: w.buffer.slice(0, length),
        body: response.body,
        reserved,
      }]);
      return;
    }
    this.#core.releaseResponse(conn, reserved);
    // Not while events are handed out: the outer pass is still reading them.
    if (++this.#unflushed >= EARLY_FLUSH_RESPONSES && !this.#handing) this.#flush();
    else this.#scheduleFlush();
  }

  /** Offers waiting responses again, oldest first per connection; true when any went out. */
  #retryBlocked(): boolean {
    let sent = false;
    for (const [connId, waiting] of this.#blocked) {
      while (waiting.length) {
        const b = waiting[0];
        const rc = this.#ep.respondBlock(connId, b.streamId, b.block, b.block.length, b.body);
        if (rc === NATIVE_ERR.STREAM_BLOCKED) break;
        waiting.shift();
        this.#core.releaseResponse(this.#conns.get(connId), b.reserved);
        sent = true;
      }
      if (!waiting.length) this.#blocked.delete(connId);
    }
    return sent;
  }

  /**
   * Flushes once the handlers that answer within {@linkcode ANSWER_HOPS}
   * microtask hops have answered (an async handler that awaits nothing slow
   * still takes some), so their answers leave with the acknowledgement of
   * their requests; flushed at once, the acknowledgement (and QPACK's
   * section acknowledgements) left in a datagram of its own, the client
   * acknowledged that, and each exchange took two datagrams each way. An
   * answer that takes longer leaves in a flush of its own, as before.
   */
  #flushAfterHandlers(): void {
    this.#flushesAtRead = this.#flushes;
    this.#afterHandlers.request();
  }

  /** Send passes so far, and their count at the last read that started handlers. */
  #flushes = 0;
  #flushesAtRead = 0;
  #afterHandlers = new MicrotaskDelay(ANSWER_HOPS, () => {
    // The answers' own flush (they came within the hops) sent the acknowledgements too.
    if (this.#flushes !== this.#flushesAtRead) this.#arm();
    else this.#flush();
  });

  #scheduleFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(() => {
      this.#flushQueued = false;
      this.#flush();
    });
  }

  /** Answers handed to the shim since the last send pass. */
  #unflushed = 0;

  #flush(): void {
    if (this.#stopped) return;
    this.#flushes++;
    this.#unflushed = 0;
    this.#sendDue();
  }

  /**
   * Keeps one timer for the shim's next deadline: re-armed only when that
   * deadline moves earlier; one that fires early runs a cheap io() and re-arms.
   */
  #arm(): void {
    // the module's thread keeps its own timers
    if (!this.#stopped && !this.#loop) this.#timer.arm(this.#ep.timeoutMs());
  }

  /** Connections the server holds (for tests and diagnostics). */
  get connectionCount(): number {
    return this.#ep.connCount();
  }

  /** Datagrams handed to the shim so far (for tests and diagnostics). */
  get datagramsReceived(): number {
    const loop = this.#loop;
    if (!loop) return this.#received;
    // the module's thread receives them itself and counts them
    loop.lock();
    try {
      return (this.#sock as H3OwnedSocket).received();
    } finally {
      loop.unlock();
    }
  }

  datagramStats(): H3DatagramStats | null {
    return this.#ep.stats();
  }

  earlyRequests(): { received: number; tooEarly: number } {
    return this.#core.earlyRequests();
  }

  get limits(): ServerLimits {
    return this.#core.limits;
  }

  /** Request streams not yet closed, over all connections (for tests and diagnostics). */
  get openStreams(): number {
    return this.#ep.openStreams();
  }

  get refusedResponses(): number {
    return this.#core.refusedResponses;
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#ep.shutdown();
    this.#flush();
    await this.#core.drain(() => this.#ep.openStreams() > 0, undefined, 10);
    this.#ep.closeAll();
    this.#flush();
    this.#stopped = true;
    for (const connId of [...this.#blocked.keys()]) this.#dropBlocked(connId);
    this.#timer.cancel();
    // the module's thread stops before the socket and server it runs go
    await this.#loop?.stop();
    try {
      this.#sock.close();
    } catch {
      // already closed
    }
    await this.#reading;
    this.#ep.close();
  }
}

/** Starts an HTTP/3 server (UDP) around `handler`; needs `tls.cert` and `tls.key`. */
export async function createNativeH3Server(
  handler: SbiHandler,
  options: H3ServerOptions = {},
): Promise<H3SbiServer> {
  if (!options.tls?.cert || !options.tls?.key) {
    throw new TypeError("The h3 server needs tls.cert and tls.key");
  }
  const tls = await resolveTls(options.tls);
  if (tls.requireClientCert && tls.caPem.length === 0) {
    throw new TypeError("tls.requireClientCert needs tls.ca to verify client certificates with");
  }
  const core = new ServerCore(handler, options);
  const l = core.limits;
  const lib = await loadH3Library();
  const hostname = options.hostname ?? "127.0.0.1";
  // Throws H3Error (SOCKET) when the address is in use or not local.
  const io = nativeIo(options.io);
  const sock = io === "module"
    ? new H3OwnedSocket(lib.symbols, hostname, options.port ?? 0)
    : new H3Socket(lib.symbols, hostname, options.port ?? 0, options.exactEcn === true);
  const totalQueued = options.maxQueuedBytes ?? l.maxQueuedResponseBytes;
  try {
    using config = new H3Config(lib.symbols, true, {
      certPem: tls.certPem,
      keyPem: tls.keyPem,
      caPem: tls.caPem,
      verifyPeer: tls.requireClientCert,
      idleTimeoutMs: l.idleTimeoutMs,
      maxBodyBytes: l.maxBodyBytes,
      maxFieldSectionBytes: l.maxHeaderSectionBytes,
      handshakeTimeoutMs: l.handshakeTimeoutMs,
      retry: options.retry,
      quicVersions: options.quicVersions,
      ecn: options.ecn,
      sendQueue: {
        connBytes: Math.min(
          options.maxQueuedBytesPerConnection ?? DEFAULT_CONN_QUEUED_BYTES,
          totalQueued,
        ),
        totalBytes: totalQueued,
        stallMs: l.stallTimeoutMs,
      },
      maxUdpPayload: options.maxUdpPayload,
      maxRecvUdpPayload: options.maxRecvUdpPayload,
      congestionControl: options.congestionControl,
      ticketLifetimeSeconds: l.ticketLifetimeSeconds,
      earlyData: options.earlyData !== false && !tls.requireClientCert,
      antiReplayWindowMs: options.antiReplayWindowMs,
    });
    const ep = new H3ServerEndpoint(lib.symbols, config, hostname, sock.port);
    return new H3Server(sock, hostname, ep, core, config.maxUdpPayload, lib.symbols);
  } catch (err) {
    sock.close();
    throw err;
  }
}
