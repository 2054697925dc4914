/**
 * The HTTP/3 client: one QUIC connection per origin, reused by every request
 * (a new stream each), over a `Deno.DatagramConn` that the shim adopts
 * (connected to the server, so an ICMP port unreachable fails the connection
 * at once). Each wake-up is one `receive()` through Deno's reactor on the main
 * thread and one `io()` call that feeds that datagram, drains every further
 * ready one and sends all output in one batch. The shim's timers are one
 * `setTimeout`, re-armed only when the next deadline moves earlier. A closed,
 * reset or failed connection rejects its pending requests with
 * `TransportError`; the next request opens a new connection. A connection
 * and its requests are a `Session` (`client_session.ts`).
 */
import { type ClientLimits, resolveClientLimits } from "../client_limits.ts";
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
import { ClientCore, requestTimeoutMs } from "../client_core.ts";
import { H3ClientConn } from "./h3_client_conn.ts";
import { H3Config, type H3CongestionControl, type H3QuicVersion } from "./h3_config.ts";
import type { H3DatagramStats } from "./h3_datagram_stats.ts";
import { H3OwnedSocket, H3Socket } from "./h3_socket.ts";
import { type NativeIo, nativeIo } from "../native/io_loop.ts";
import { shimVersion } from "./shim_version.ts";
import { sharedTicketCache, type TicketCache } from "../ticket_cache.ts";
import { SetupRecorder } from "../setup_timings.ts";
import { loadH3Library } from "./loader.ts";
import type { Sbh3Symbols } from "./symbols.ts";
import { Session } from "./client_session.ts";

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
  /**
   * Who reads and writes the socket: `runtime`, Deno's reactor, or `module`,
   * the shim's own I/O thread, which reads every datagram with its ECN mark,
   * keeps the timers and acknowledges, and wakes JavaScript only for answers
   * and connection events. Default: the `SBILAB_NATIVE_IO` environment
   * variable, else `runtime`.
   */
  io?: NativeIo;
}

const EMPTY_BODY = new Uint8Array(0);

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
    let sock: H3Socket | H3OwnedSocket | undefined;
    let conn: H3ClientConn | undefined;
    let ticket: Uint8Array | undefined;
    let setup: SetupRecorder | undefined;
    try {
      sock = nativeIo(this.#options.io) === "module"
        ? new H3OwnedSocket(this.#sym, localIp, 0)
        : new H3Socket(this.#sym, localIp, 0, this.#options.exactEcn === true);
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
    return new Session(sock, conn, (t) => cache?.put(key, t), ticket, setup!, this.#sym);
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
