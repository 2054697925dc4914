/**
 * The HTTP/3 client: one QUIC connection per origin, reused by every request
 * (a new stream each), over a `Deno.DatagramConn` that the shim adopts
 * (connected to the server, so an ICMP port unreachable fails the connection
 * at once). Each wake-up is one `receive()` through Deno's reactor on the main
 * thread and one `io()` call that feeds that datagram, drains every further
 * ready one and sends all output in one batch. The shim's timers are one
 * `setTimeout`, re-armed only when the next deadline moves earlier. A closed,
 * reset or failed connection rejects its pending requests with
 * `TransportError`; the next request opens a new connection.
 */
import { type ClientLimits, resolveClientLimits } from "../client_limits.ts";
import { DeadlineTimer } from "./deadline_timer.ts";
import { parseOrigin } from "../origin.ts";
import { type ResolvedTls, resolveTls, type TlsConnectionInfo } from "../tls.ts";
import { SbiRequestBlock } from "../sbi_request_block.ts";
import {
  type ClientOptions,
  type ClientRequest,
  type ClientResponse,
  type ConnectionInfo,
  type SbiClient,
  type SetupTimings,
  TransportError,
} from "../types.ts";
import {
  ClientCore,
  type PendingRequest,
  PendingStreams,
  requestTimeoutMs,
  timedRequest,
} from "../client_core.ts";
import { NATIVE_ERR } from "../native/errors.ts";
import { TLS_STATE } from "../native/tls_session.ts";
import { H3_EVENT, type H3Event } from "./h3_event.ts";
import { H3ClientConn } from "./h3_client_conn.ts";
import { H3Config, type H3CongestionControl, type H3QuicVersion } from "./h3_config.ts";
import type { H3DatagramStats } from "./h3_datagram_stats.ts";
import { H3Socket } from "./h3_socket.ts";
import { shimVersion } from "./shim_version.ts";
import { sharedTicketCache, type TicketCache } from "../ticket_cache.ts";
import { SetupRecorder } from "../setup_timings.ts";
import { loadH3Library } from "./loader.ts";
import type { Sbh3Symbols } from "./symbols.ts";
import { toClientResponse } from "./convert.ts";

/** Extra options of the HTTP/3 client. */
export interface H3ClientOptions extends ClientOptions {
  /** Idle timeout of the QUIC connection in ms. Default 30000. */
  idleTimeoutMs?: number;
  /**
   * Largest UDP payload to send, for a path MTU you know (1200..65527; 16384
   * on loopback, 1452 on Ethernet). Used once the server's max_udp_payload_size
   * is known, never above it; a report should name it. Default: standard QUIC,
   * 1200-byte datagrams and path MTU discovery up to 1444.
   */
  maxUdpPayload?: number;
  /**
   * The max_udp_payload_size advertised to the server; larger datagrams are
   * dropped unread. Default 65527.
   */
  maxRecvUdpPayload?: number;
  /**
   * Congestion controller of each QUIC connection. Default "host": the same
   * kind as the host's TCP (net.ipv4.tcp_congestion_control: bbr, reno, else
   * cubic), so h3 and h2 cross a lossy link under like controllers.
   */
  congestionControl?: H3CongestionControl;
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
   * receive, which costs a thread crossing per wake-up (a slower round trip
   * at low concurrency). Default false.
   */
  exactEcn?: boolean;
}

/** Microtask hops the flush after a read waits for callers to submit their next requests. */
const READ_FLUSH_HOPS = 4;

/** Methods a client may send in 0-RTT: safe, so a replay changes nothing (RFC 8470 §4.1, RFC 9110 §9.2.1). */
const EARLY_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

const EMPTY_BODY = new Uint8Array(0);

/** A request of one session: its block (kept while it may have to go again), body and stream. */
class Queued implements PendingRequest {
  /** The encoded header block; undefined once sent for good (1-RTT). */
  block: Uint8Array | undefined = undefined;
  /** Stream id, -1 while queued. */
  stream = -1;
  /** Settles the caller's promise and stops its timeout. */
  pending!: PendingRequest;

  /** `early`: safe to send in 0-RTT. */
  constructor(readonly early: boolean, readonly body: Uint8Array) {}

  resolve(r: ClientResponse): void {
    this.pending.resolve(r);
  }

  reject(e: Error): void {
    this.pending.reject(e);
  }
}

/** One QUIC connection and its socket. */
class Session {
  #sock: H3Socket;
  #conn: H3ClientConn;
  #onTicket: (ticket: Uint8Array) => void;
  #offered: Uint8Array | undefined;
  #gotTicket = false;
  #setup: SetupRecorder;
  /** The first response is still to come: io() marks the set-up phases. */
  #timing = true;
  #connected = false;
  #lastTls: TlsConnectionInfo | null = null;
  #pending = new PendingStreams<Queued>();
  #queued: Queued[] = [];
  #timer = new DeadlineTimer(() => {
    if (this.#dead) return;
    // Fired early (the deadline moved later since it was armed): only re-arm, no I/O pass.
    const ms = this.#conn.timeoutMs();
    if (ms > 0) this.#timer.arm(ms);
    else this.#process();
  });
  #reading: Promise<void>;
  /** No new requests: closed, failed or told to go away. */
  unusable = false;
  #dead = false;
  #ended = Promise.withResolvers<void>();
  #lastStats: H3DatagramStats | null = null;
  #lastToken: Uint8Array | null = null;

  /**
   * `offered`: the ticket this connection resumes with, if any. A new ticket
   * from the server goes to `onTicket`; a connection that resumed but ends
   * before its new ticket arrived (0-RTT answers come a round trip before
   * it) hands the offered one back, so the next connection still resumes.
   */
  constructor(
    sock: H3Socket,
    conn: H3ClientConn,
    onTicket: (ticket: Uint8Array) => void,
    offered: Uint8Array | undefined,
    setup: SetupRecorder,
  ) {
    this.#setup = setup;
    this.#sock = sock;
    this.#conn = conn;
    this.#onTicket = onTicket;
    this.#offered = offered;
    this.#flush();
    this.#reading = this.#readLoop();
  }

  /**
   * Sends a request whose block `block` encodes now: at once when the
   * connection takes it (the output leaves with the others of this turn of
   * the event loop), else queued in order.
   */
  request(
    block: SbiRequestBlock,
    method: string,
    path: string,
    headers: Record<string, string> | undefined,
    body: Uint8Array,
    timeoutMs: number,
    onHeaders?: (sent: Record<string, string>) => void,
  ): Promise<ClientResponse> {
    const q = new Queued(EARLY_METHODS.has(method.toUpperCase()), body);
    const t = timedRequest(timeoutMs, () => {
      if (q.stream >= 0) {
        this.#pending.delete(q.stream);
        if (!this.#dead) {
          this.#conn.cancel(q.stream);
          this.#scheduleFlush();
        }
      } else {
        this.#queued = this.#queued.filter((e) => e !== q);
      }
    });
    q.pending = t.pending;
    let len: number;
    try {
      len = block.encode(method, path, headers, timeoutMs, body.length);
      if (onHeaders !== undefined) onHeaders(block.sentHeaders(len));
    } catch (err) {
      t.pending.reject(err as Error);
      return t.promise;
    }
    if (this.#queued.length === 0 && (this.#connected || q.early) && !this.#dead) {
      // Before the handshake completes the block may have to go again (0-RTT refused): keep it.
      if (!this.#connected) q.block = block.buffer.slice(0, len);
      if (this.#send(q, block.buffer, len)) return t.promise;
    }
    q.block ??= block.buffer.slice(0, len);
    this.#queued.push(q);
    this.#submit();
    this.#scheduleFlush();
    return t.promise;
  }

  /**
   * Opens a stream for `q`; true when it went (or failed and was rejected),
   * false when the connection has no stream for it now.
   */
  #send(q: Queued, block: Uint8Array, length: number): boolean {
    let id: number;
    try {
      id = this.#conn.requestBlock(block, length, q.body);
    } catch (err) {
      q.pending.reject(
        new TransportError(`HTTP/3 request rejected: ${(err as Error).message}`, { cause: err }),
      );
      return true;
    }
    if (id < 0) return false;
    this.#setup.requestSent();
    q.stream = id;
    this.#pending.add(id, q);
    this.#scheduleFlush();
    return true;
  }

  /** Sends what this turn of the event loop submitted, in one I/O pass. */
  #scheduleFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(this.#scheduled);
  }

  #flushQueued = false;
  #scheduled = () => {
    this.#flushQueued = false;
    this.#flush();
  };

  /**
   * Opens streams for queued requests while the connection allows. Before
   * the handshake completes (0-RTT) only safe methods go; the rest wait.
   */
  #submit(): void {
    for (let i = 0; i < this.#queued.length && !this.#dead;) {
      const q = this.#queued[i];
      if (!this.#connected && !q.early) {
        i++;
        continue;
      }
      const block = q.block!;
      if (!this.#send(q, block, block.length)) return;
      this.#queued.splice(i, 1);
      if (this.#connected) q.block = undefined;
    }
  }

  /**
   * Feeds `first`, receives all further ready datagrams, runs timers and sends
   * all output; returns how many datagrams came in.
   */
  #io(first?: Uint8Array): number {
    try {
      // A datagram Deno received marks the transport up before the shim reads it.
      if (first?.length && this.#timing) this.#setup.connected();
      const n = this.#conn.io(this.#sock, first);
      if (n > 0 && this.#timing) {
        // Datagrams came in (through Deno's receive or the shim's own): the transport is up.
        this.#setup.connected();
      }
      return n;
    } catch {
      // the connection is freed; the CLOSED event already failed it
      return 0;
    }
  }

  /** Most rounds of one exchange that open queued streams as credit comes in. */
  static readonly #SUBMIT_ROUNDS = 64;

  /**
   * One I/O pass and what it brought: hands out the events of every datagram
   * read, and opens queued requests' streams for as long as the server's
   * credit (MAX_STREAMS, which may come in any datagram the shim reads) lets
   * them go, sending them in the same pass. A request left queued here would
   * wait for a datagram that never comes once every open stream is answered.
   */
  #exchange(first?: Uint8Array): void {
    let got = this.#io(first);
    this.#drainEvents();
    for (let i = 0; i < Session.#SUBMIT_ROUNDS && this.#queued.length && !this.#dead; i++) {
      const waiting = this.#queued.length;
      this.#submit();
      if (this.#queued.length === waiting && got === 0) break;
      got = this.#io();
      this.#drainEvents();
    }
  }

  #flush(): void {
    if (this.#dead) return;
    this.#exchange();
    this.#arm();
  }

  /**
   * Keeps one timer for the shim's next deadline: re-armed only when that
   * deadline moves earlier; one that fires early (the deadline moved later)
   * runs a cheap io() and re-arms.
   */
  #arm(): void {
    if (!this.#dead) this.#timer.arm(this.#conn.timeoutMs());
  }

  async #readLoop(): Promise<void> {
    while (!this.#dead) {
      let got;
      try {
        got = await this.#sock.receive();
      } catch (err) {
        this.#fail(
          new TransportError(`HTTP/3 socket failed: ${(err as Error).message}`, { cause: err }),
        );
        break;
      }
      if (got === null || this.#dead) break;
      this.#process(got[0]);
    }
  }

  #drainEvents(): void {
    for (let e: H3Event | null; !this.#dead && (e = this.#conn.poll());) this.#onEvent(e);
    if (this.#conn.tlsState() & TLS_STATE.TICKET) {
      const t = this.#conn.takeTicket();
      if (t) {
        this.#gotTicket = true;
        this.#onTicket(t);
      }
    }
  }

  /**
   * Feeds `first` (or runs the timers), hands out what completed and sends.
   * On an established connection a received datagram is only read here.
   * When it completed answers, they resolve now and what it asks to send (an
   * ACK, flow credit) leaves in the flush after the callers' continuations,
   * with the requests they submit: one datagram for both instead of an ACK
   * of its own. When it completed nothing (part of a larger answer), the rest
   * is read and acknowledged at once.
   */
  #process(first?: Uint8Array): void {
    const readOnly = first !== undefined && first.length > 0 && this.#connected && !this.#timing;
    const settled = this.#settled;
    if (readOnly) {
      this.#conn.recv(first);
      this.#drainEvents();
      if (this.#dead) return;
      if (this.#queued.length) this.#submit();
      if (this.#settled !== settled) this.#flushAfterCallers();
      else this.#flush();
    } else {
      this.#exchange(first);
      if (this.#dead) return;
      this.#arm();
    }
    if (this.unusable && this.#pending.size === 0 && this.#queued.length === 0) void this.close();
  }

  /**
   * Flushes once the callers whose answers just resolved have resumed: a
   * resolved promise resumes its awaiting caller in the next microtask, and
   * each async layer above it adds one. A caller deeper than
   * {@linkcode READ_FLUSH_HOPS} layers still gets its answer at once; its
   * ACK only goes in a datagram of its own.
   */
  #flushAfterCallers(): void {
    if (this.#hopsLeft > 0) return;
    this.#hopsLeft = READ_FLUSH_HOPS;
    queueMicrotask(this.#afterCallers);
  }

  /** Microtask hops left before the flush {@linkcode #flushAfterCallers} queued (0: none queued). */
  #hopsLeft = 0;
  #afterCallers = (): void => {
    if (--this.#hopsLeft > 0) return queueMicrotask(this.#afterCallers);
    this.#flush();
  };

  /** Answers handed out (resolved or rejected by the server's reset) so far. */
  #settled = 0;

  #onEvent(e: H3Event): void {
    switch (e.type) {
      case H3_EVENT.MESSAGE: {
        const p = this.#pending.take(e.streamId);
        if (!p) return;
        this.#settled++;
        if (this.#timing) {
          // The first byte is the response's first header, timed by the shim: other datagrams
          // (a handshake packet the server sent again after a spurious timeout) do not count.
          const ago = this.#conn.firstResponseAgoMs();
          if (ago !== undefined) this.#setup.firstByteAgo(ago);
        }
        this.#setup.responseComplete();
        this.#timing = false;
        try {
          p.resolve(toClientResponse(e.headers, e.body));
        } catch (err) {
          p.reject(err as Error);
        }
        return;
      }
      case H3_EVENT.RESET: {
        const p = this.#pending.take(e.streamId);
        if (!p) return;
        this.#settled++;
        p.reject(
          new TransportError(`HTTP/3 stream reset by the server (error 0x${e.code.toString(16)})`),
        );
        return;
      }
      case H3_EVENT.GOAWAY:
        this.unusable = true;
        return;
      case H3_EVENT.CONNECTED:
        this.#setup.tlsDone();
        this.#connected = true;
        this.#lastTls = this.#conn.tlsInfo();
        this.#submit();
        return;
      case H3_EVENT.EARLY_REJECTED: {
        // The server refused 0-RTT: what went early is gone; send it again, in order.
        const again = this.#pending.drain();
        for (const q of again) q.stream = -1;
        this.#queued.unshift(...again);
        return;
      }
      case H3_EVENT.CLOSED: {
        const text = this.#conn.errorText() || "Connection closed";
        const prefix = e.code === NATIVE_ERR.TLS
          ? "HTTP/3 TLS failure"
          : e.code === NATIVE_ERR.REFUSED
          ? "HTTP/3 server unreachable"
          : "HTTP/3 connection closed";
        this.#fail(new TransportError(`${prefix}: ${text}`));
        return;
      }
    }
  }

  #fail(err: Error): void {
    if (this.#dead) return;
    this.unusable = true;
    // Send a pending CONNECTION_CLOSE, if any, before going quiet.
    this.#io();
    this.#lastTls = this.#conn.tlsInfo() ?? this.#lastTls;
    if (!this.#gotTicket && this.#offered && this.#lastTls?.resumed) this.#onTicket(this.#offered);
    this.#dead = true;
    this.#ended.resolve();
    this.#pending.rejectAll(err);
    for (const q of this.#queued) q.reject(err);
    this.#queued = [];
    this.#timer.cancel();
    try {
      this.#sock.close();
    } catch {
      // already closed
    }
  }

  /** Runs the shim's timers now when their deadline has passed and the event loop has not run them yet. */
  runOverdueTimer(): void {
    if (!this.#dead && this.#timer.overdue()) this.#process();
  }

  /** Request streams the shim still holds state for. */
  get streamCount(): number {
    return this.#conn.streamCount();
  }

  /** Starts a 1-RTT key update on this connection; false when not allowed yet or closed. */
  updateKey(): boolean {
    if (this.#dead) return false;
    const ok = this.#conn.updateKey();
    if (ok) this.#flush();
    return ok;
  }

  /** The last NEW_TOKEN the server gave this connection (kept after close), or null. */
  token(): Uint8Array | null {
    return this.#conn.token() ?? this.#lastToken;
  }

  /** Datagram counters of this connection; after close, its last figures. */
  stats(): H3DatagramStats | null {
    return this.#conn.stats() ?? this.#lastStats;
  }

  /** The set-up phases of this connection's first request, once its response is complete. */
  setupTimings(): SetupTimings | undefined {
    return this.#setup.timings();
  }

  /** What the handshake negotiated (kept after close); null before it completed. */
  tlsInfo(): TlsConnectionInfo | null {
    return this.#dead ? this.#lastTls : (this.#conn.tlsInfo() ?? this.#lastTls);
  }

  /** The exporter of this connection; throws `RangeError` when it is not established or closed. */
  exportKeyingMaterial(label: string, context: Uint8Array | undefined, length: number): Uint8Array {
    if (this.#dead) throw new RangeError("The HTTP/3 connection is closed");
    return this.#conn.exportKeyingMaterial(label, context, length);
  }

  /** Resolves once the connection ended: closed, failed, idle or closed by the peer. */
  get ended(): Promise<void> {
    return this.#ended.promise;
  }

  /** Closes gracefully: CONNECTION_CLOSE with H3_NO_ERROR, then frees everything. */
  async close(): Promise<void> {
    if (!this.#dead) {
      this.#conn.shutdown();
      this.#fail(new TransportError("Client is closed"));
    }
    await this.#reading;
    this.#lastStats = this.#conn.stats();
    this.#lastToken = this.#conn.token() ?? this.#lastToken;
    this.#lastTls = this.#conn.tlsInfo() ?? this.#lastTls;
    this.#conn.close();
  }
}

function stripBrackets(host: string): string {
  return host.replace(/^\[|\]$/g, "");
}

async function resolveHost(host: string): Promise<string> {
  const h = stripBrackets(host);
  if (/^[0-9.]+$/.test(h) || h.includes(":")) return h;
  if (h === "localhost") return "127.0.0.1";
  try {
    const a = await Deno.resolveDns(h, "A");
    if (a.length) return a[0];
  } catch {
    // try AAAA
  }
  const aaaa = await Deno.resolveDns(h, "AAAA").catch(() => [] as string[]);
  if (aaaa.length) return aaaa[0];
  throw new TransportError(`Cannot resolve ${h}`);
}

/** The HTTP/3 client's extras beyond the shared contract. */
export interface H3SbiClient extends SbiClient {
  /** The explicit datagram size asked for (`maxUdpPayload`), or undefined for standard PMTUD. */
  readonly maxUdpPayload: number | undefined;
  /** Datagram counters of the current (or last) connection, null before the first. */
  datagramStats(): H3DatagramStats | null;
  /** What the current (or last) connection's handshake negotiated; null before the first. */
  tlsInfo(): TlsConnectionInfo | null;
  /** Stack, libraries, TLS and datagram size of the current (or last) connection. */
  connectionInfo(): ConnectionInfo | undefined;
  /**
   * RFC 5705 / RFC 8446 §7.5 exporter of the current connection (see
   * `n32MasterKey` for the N32 master key); throws `RangeError` when no
   * connection is established.
   */
  exportKeyingMaterial(label: string, context: Uint8Array | undefined, length: number): Uint8Array;
  /** Starts a 1-RTT key update on the current connection; false when there is none or it is not allowed yet. */
  updateKey(): boolean;
  /**
   * Resolves once the current connection has ended (idle timeout, closed by
   * the peer, failed); at once when none is open. The next request opens a
   * new one.
   */
  connectionEnded(): Promise<void>;
}

class H3Client implements H3SbiClient {
  readonly transport = "h3" as const;
  readonly maxUdpPayload: number | undefined;
  #origin: URL;
  #options: H3ClientOptions;
  #limits: ClientLimits;
  #sym: Sbh3Symbols;
  #tls: ResolvedTls;
  #core = new ClientCore<Session>(() => this.#connect());
  #tickets: TicketCache | undefined;
  #ticketKey: string;
  #versions: string;
  #block: SbiRequestBlock;

  constructor(origin: URL, options: H3ClientOptions, sym: Sbh3Symbols, tls: ResolvedTls) {
    this.#origin = origin;
    this.#options = options;
    this.#limits = resolveClientLimits(options);
    this.#sym = sym;
    this.#tls = tls;
    this.maxUdpPayload = options.maxUdpPayload;
    this.#tickets = options.resumption === false
      ? undefined
      : options.ticketCache ?? sharedTicketCache;
    // A ticket is only offered where the same trust and identity obtained it.
    this.#ticketKey = [
      "h3",
      origin.origin,
      tls.serverName ?? "",
      tls.insecure,
      ...tls.caPem,
      tls.certPem ?? "",
    ].join("\n");
    this.#versions = shimVersion(sym);
    this.#block = new SbiRequestBlock({
      scheme: "https",
      authority: origin.host,
      nfType: options.nfType,
    });
  }

  async #connect(): Promise<Session> {
    const remoteIp = await resolveHost(this.#origin.hostname);
    const remotePort = Number(this.#origin.port || 443);
    const v6 = remoteIp.includes(":");
    const localIp = remoteIp === "127.0.0.1"
      ? "127.0.0.1"
      : remoteIp === "::1"
      ? "::1"
      : v6
      ? "::"
      : "0.0.0.0";
    let sock: H3Socket | undefined;
    let conn: H3ClientConn | undefined;
    let ticket: Uint8Array | undefined;
    let setup: SetupRecorder | undefined;
    try {
      sock = new H3Socket(this.#sym, localIp, 0, this.#options.exactEcn === true);
      sock.connect(remoteIp, remotePort);
      using config = new H3Config(this.#sym, false, {
        certPem: this.#tls.certPem,
        keyPem: this.#tls.keyPem,
        caPem: this.#tls.caPem,
        verifyPeer: !this.#tls.insecure,
        idleTimeoutMs: this.#options.idleTimeoutMs,
        maxBodyBytes: this.#limits.maxBodyBytes,
        maxFieldSectionBytes: this.#limits.maxHeaderSectionBytes,
        maxUdpPayload: this.#options.maxUdpPayload,
        maxRecvUdpPayload: this.#options.maxRecvUdpPayload,
        ecn: this.#options.ecn,
        quicVersions: this.#options.quicVersions,
        token: this.#core.last?.token() ?? undefined,
        congestionControl: this.#options.congestionControl,
        handshakeTimeoutMs: this.#limits.handshakeTimeoutMs,
        earlyData: this.#options.earlyData !== false,
      });
      // The clock starts with the connection, just before its first datagram leaves (as TCP's
      // with the SYN); the shim's own first-response time counts from the same moment.
      setup = new SetupRecorder();
      conn = new H3ClientConn(this.#sym, config, {
        serverName: this.#tls.serverName ?? stripBrackets(this.#origin.hostname),
        localIp,
        localPort: sock.port,
        remoteIp,
        remotePort,
      });
      ticket = this.#tickets?.take(this.#ticketKey);
      if (ticket) {
        try {
          conn.resume(ticket);
        } catch {
          // a ticket GnuTLS refuses (corrupt, other format) only costs the resumption
          ticket = undefined;
        }
      }
    } catch (err) {
      sock?.close();
      throw new TransportError(
        `Cannot open an HTTP/3 connection to ${this.#origin.host}: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
    const cache = this.#tickets, key = this.#ticketKey;
    return new Session(sock, conn, (t) => cache?.put(key, t), ticket, setup!);
  }

  request(req: ClientRequest): Promise<ClientResponse> {
    if (this.#core.closed) return Promise.reject(new TransportError("Client is closed"));
    const path = req.path;
    if (typeof path !== "string" || !path.startsWith("/")) {
      return Promise.reject(new TypeError(`Request path must start with "/": ${path}`));
    }
    const timeoutMs = requestTimeoutMs(req, this.#options);
    const body = req.body ?? EMPTY_BODY;
    const method = req.method ?? "GET";
    let s = this.#core.session();
    if (s instanceof Session) {
      // A deadline that passed unseen (the idle timeout) closes the connection now, not on this request.
      s.runOverdueTimer();
      if (s.unusable) s = this.#core.session();
    }
    if (s instanceof Session) {
      return s.request(
        this.#block,
        method,
        path,
        req.headers,
        body,
        timeoutMs,
        req.onRequestHeaders,
      );
    }
    return s.then((s) =>
      s.request(this.#block, method, path, req.headers, body, timeoutMs, req.onRequestHeaders)
    );
  }

  datagramStats(): H3DatagramStats | null {
    return this.#core.last?.stats() ?? null;
  }

  tlsInfo(): TlsConnectionInfo | null {
    return this.#core.last?.tlsInfo() ?? null;
  }

  setupTimings(): SetupTimings | undefined {
    return this.#core.last?.setupTimings();
  }

  connectionInfo(): ConnectionInfo | undefined {
    const session = this.#core.last;
    if (!session) return undefined;
    const v = Object.fromEntries(this.#versions.split(" ").map((p) => p.split("/")));
    const tls = session.tlsInfo();
    const stats = session.stats();
    return {
      stack: "native",
      implementation: `ngtcp2 ${v.ngtcp2}, nghttp3 ${v.nghttp3}`,
      tls: {
        library: `GnuTLS ${v.gnutls}`,
        ...(tls
          ? {
            version: tls.version,
            suite: tls.cipherSuite,
            group: tls.group,
            resumed: tls.resumed,
            earlyData: tls.earlyData,
          }
          : {}),
      },
      ...(stats ? { maxDatagramBytes: Math.max(stats.largestSent, stats.largestReceived) } : {}),
    };
  }

  exportKeyingMaterial(label: string, context: Uint8Array | undefined, length: number): Uint8Array {
    const session = this.#core.current;
    if (!session) throw new RangeError("No HTTP/3 connection is open");
    return session.exportKeyingMaterial(label, context, length);
  }

  updateKey(): boolean {
    return this.#core.current?.updateKey() ?? false;
  }

  connectionEnded(): Promise<void> {
    return this.#core.current?.ended ?? Promise.resolve();
  }

  /** Request streams the current connection's shim state still holds (for tests and diagnostics). */
  get openStreams(): number {
    return this.#core.openStreams;
  }

  close(): Promise<void> {
    return this.#core.close();
  }
}

/** Creates an HTTP/3 client for `https://host:port`. */
export async function createNativeH3Client(
  origin: string,
  options: H3ClientOptions = {},
): Promise<H3SbiClient> {
  const url = parseOrigin(origin, ["https:"]);
  const tls = await resolveTls(options.tls ?? {});
  const lib = await loadH3Library();
  return new H3Client(url, options, lib.symbols, tls);
}
