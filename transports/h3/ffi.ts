/**
 * Safe wrappers over the sbh3 symbols: each owns its native handle in a
 * `#private` field, `close()` is idempotent and frees it (children first),
 * and `Symbol.dispose` calls `close()`. Negative return codes become
 * {@linkcode H3Error}; `DONE` becomes `null` or `false`.
 */
import type { Sbh3Symbols } from "./symbols.ts";
import type { TlsConnectionInfo } from "../tls.ts";
import {
  decodeHeaderBlock,
  encodeHeaderBlock,
  EVENT_HEADER_LEN,
  type HeaderList,
  readEventRecord,
  WIRE_EVENT,
} from "../wire.ts";

/** Error codes of the shim (enum sbh3_error). */
export const H3_ERR = {
  DONE: -1,
  BUFFER_TOO_SHORT: -2,
  INVALID: -3,
  NOMEM: -4,
  TLS: -5,
  PROTO: -6,
  CLOSED: -7,
  STREAM_BLOCKED: -8,
  NOT_FOUND: -9,
  IDLE: -10,
  INTERNAL: -11,
  REFUSED: -12,
  SOCKET: -13,
} as const;

const CODE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(H3_ERR).map(([k, v]) => [v, k]),
);

/** A failure reported by the native HTTP/3 shim; `code` is from {@linkcode H3_ERR}. */
export class H3Error extends Error {
  /** Negative shim error code. */
  readonly code: number;
  constructor(code: number, message?: string, options?: ErrorOptions) {
    super(message ?? `HTTP/3 shim error ${CODE_NAMES[code] ?? code}`, options);
    this.name = "H3Error";
    this.code = code;
  }
}

/** Event types (enum sbh3_event_type: the shared wire's, transports/native/sbwire.h). */
export const H3_EVENT = WIRE_EVENT;
/** Bit in a server MESSAGE event's `code`: the request arrived (at least partly) in 0-RTT. */
export const H3_MSG_EARLY = 1;

/** Bits of the TLS state (enum sbh3_tls_state). */
export const H3_TLS_STATE = {
  ESTABLISHED: 1,
  RESUMED: 2,
  EARLY_ACCEPTED: 4,
  TICKET: 8,
  EARLY_ATTEMPTED: 16,
} as const;

const TLS_INFO = { VERSION: 1, SUITE: 2, GROUP: 3, ALPN: 4, PEER_SUBJECT: 5 } as const;

/** Longest exporter output. */
const MAX_EXPORT = 65535;

/**
 * Reads what a TLS session negotiated through `text(kind, buf)` (an
 * sbh3_*_tls_info call), `state` and `hsBytes(sent)`; null before the
 * handshake completed.
 */
function readTlsInfo(
  state: number,
  text: (kind: number, buf: Uint8Array<ArrayBuffer>) => number,
  hsBytes: (sent: number) => number,
): TlsConnectionInfo | null {
  if (state < 0 || !(state & H3_TLS_STATE.ESTABLISHED)) return null;
  const buf = new Uint8Array(1024);
  const get = (kind: number) => {
    const n = text(kind, buf);
    return n > 0 ? decoder.decode(buf.subarray(0, n)) : "";
  };
  const subject = get(TLS_INFO.PEER_SUBJECT);
  return {
    version: get(TLS_INFO.VERSION),
    cipherSuite: get(TLS_INFO.SUITE),
    group: get(TLS_INFO.GROUP),
    alpn: get(TLS_INFO.ALPN),
    resumed: (state & H3_TLS_STATE.RESUMED) !== 0,
    ...(subject ? { peerSubject: subject } : {}),
    handshakeBytes: { sent: hsBytes(1), received: hsBytes(0) },
    earlyData: state & H3_TLS_STATE.EARLY_ACCEPTED
      ? "accepted"
      : state & H3_TLS_STATE.EARLY_ATTEMPTED
      ? "rejected"
      : "none",
  };
}

/** Runs an exporter call `run(label, context, out)` after checking its arguments; throws `RangeError`. */
function runExporter(
  label: string,
  context: Uint8Array | undefined,
  length: number,
  run: (
    l: Uint8Array<ArrayBuffer>,
    c: Uint8Array<ArrayBuffer>,
    cLen: number,
    out: Uint8Array<ArrayBuffer>,
  ) => number,
): Uint8Array {
  if (!Number.isInteger(length) || length < 1 || length > MAX_EXPORT) {
    throw new RangeError(`Exporter length must be 1 to ${MAX_EXPORT} bytes: ${length}`);
  }
  if (label.length === 0) throw new RangeError("Exporter label must not be empty");
  const l = encoder.encode(label);
  const c = (context && context.length ? context : EMPTY) as Uint8Array<ArrayBuffer>;
  const out = new Uint8Array(length);
  const n = run(l, c, context?.length ?? 0, out);
  if (n !== length) {
    throw new RangeError(
      `Cannot export keying material (${
        n === H3_ERR.INVALID ? "the handshake has not completed" : CODE_NAMES[n] ?? n
      })`,
    );
  }
  return out;
}

/** One event polled from a connection or server. */
export interface H3Event {
  /** One of {@linkcode H3_EVENT}. */
  type: number;
  /** Server connection id (0 on the client). */
  connId: number;
  /** Stream id, or -1 for connection events. */
  streamId: number;
  /** Application error code (RESET) or shim error code (CLOSED). */
  code: number;
  /** Header fields including pseudo-headers (MESSAGE). */
  headers: HeaderList;
  /** Body bytes (MESSAGE), a copy owned by the caller. */
  body: Uint8Array;
}

/** Datagram counters of one connection, or totals of a server (enum sbh3_stat). */
export interface H3DatagramStats {
  /** Datagrams sent and their bytes. */
  datagramsSent: number;
  bytesSent: number;
  /** Largest UDP payload sent. */
  largestSent: number;
  /** Datagrams received (and accepted) and their bytes. */
  datagramsReceived: number;
  bytesReceived: number;
  /** Largest UDP payload received. */
  largestReceived: number;
  /** Received datagrams dropped for exceeding the advertised max_udp_payload_size. */
  oversizeDropped: number;
  /** The path's current largest payload (PMTUD result or the explicit size); 0 for server totals. */
  pathMaxPayload: number;
  /** The peer's max_udp_payload_size; 0 until known, and for server totals. */
  peerMaxPayload: number;
  /** Response body bytes held now for open streams. */
  queuedBytes: number;
  /** Retry packets sent (server) or received (client). */
  retries: number;
  /** NEW_TOKEN tokens issued (server) or received (client). */
  newTokens: number;
  /** 1-RTT key updates: ours when started, the peer's up to a PTO after it. */
  keyUpdates: number;
  /** Datagrams sent with an ECN codepoint (ngtcp2 marks 10 while it validates the path, all once validated). */
  ecnSent: number;
  /** Datagrams received with an ECN codepoint and reported to QUIC. */
  ecnReceived: number;
  /** The QUIC version in use (0x1, or 0x709a50c4 for the v2 draft); 0 for server totals. */
  version: number;
}

const STAT_FIELDS: (keyof H3DatagramStats)[] = [
  "datagramsSent",
  "bytesSent",
  "largestSent",
  "datagramsReceived",
  "bytesReceived",
  "largestReceived",
  "oversizeDropped",
  "pathMaxPayload",
  "peerMaxPayload",
  "queuedBytes",
  "retries",
  "newTokens",
  "keyUpdates",
  "ecnSent",
  "ecnReceived",
  "version",
];

/** Reads the counters through `read(out, n)` (an sbh3_*_stats call); null when it fails. */
function readStats(
  read: (out: BigUint64Array<ArrayBuffer>, n: bigint) => number,
): H3DatagramStats | null {
  const out = new BigUint64Array(STAT_FIELDS.length);
  const n = read(out, BigInt(out.length));
  if (n < 0) return null;
  const stats = {} as H3DatagramStats;
  STAT_FIELDS.forEach((k, i) => (stats[k] = i < n ? Number(out[i]) : 0));
  return stats;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function cstr(s: string): Uint8Array<ArrayBuffer> {
  const b = new Uint8Array(s.length * 3 + 1);
  const { written } = encoder.encodeInto(s, b);
  return b.subarray(0, written + 1) as Uint8Array<ArrayBuffer>;
}

function check(rc: number, what: string): number {
  if (rc < 0) throw new H3Error(rc, `${what} failed: ${CODE_NAMES[rc] ?? rc}`);
  return rc;
}

const EMPTY = new Uint8Array(1);
const EMPTY_CSTR = new Uint8Array(1);

/** Polls events with a growable buffer. */
class EventReader {
  #buf = new Uint8Array(64 * 1024);
  #view = new DataView(this.#buf.buffer);

  read(poll: (buf: Uint8Array, cap: number) => number): H3Event | null {
    for (;;) {
      const n = poll(this.#buf, this.#buf.length);
      if (n === H3_ERR.DONE) return null;
      if (n === H3_ERR.BUFFER_TOO_SHORT) {
        const need = Number(this.#view.getBigUint64(0, true));
        this.#buf = new Uint8Array(Math.max(need, this.#buf.length * 2));
        this.#view = new DataView(this.#buf.buffer);
        continue;
      }
      check(n, "poll");
      const r = readEventRecord(this.#view, 0);
      const hs = EVENT_HEADER_LEN, he = hs + r.headerLength;
      return {
        type: r.type,
        connId: r.connId,
        streamId: r.streamId,
        code: r.code,
        headers: r.headerLength ? decodeHeaderBlock(this.#buf.subarray(hs, he)) : [],
        body: this.#buf.slice(he, he + r.bodyLength),
      };
    }
  }
}

/** Options for {@linkcode H3Config}. */
export interface H3ConfigOptions {
  /** Own certificate chain in PEM. Required on the server, optional (mTLS) on the client. */
  certPem?: string;
  /** Private key in PEM matching `certPem`. */
  keyPem?: string;
  /** Trusted CAs in PEM. Default none. */
  caPem?: string[];
  /** Client: verify the server (default true). Server: require a client cert (default false). */
  verifyPeer?: boolean;
  /** Idle timeout in ms. Default 30000. */
  idleTimeoutMs?: number;
  /** Largest body accepted per stream. Default 64 MiB. */
  maxBodyBytes?: number;
  /**
   * Largest UDP payload sent, for a path MTU the caller knows (1200..65527), used once the
   * peer's max_udp_payload_size is known and never above it. Default: 1200 bytes, then path
   * MTU discovery up to 1444.
   */
  maxUdpPayload?: number;
  /** The max_udp_payload_size advertised to the peer; larger datagrams are dropped. Default 65527. */
  maxRecvUdpPayload?: number;
  /** Congestion controller. Default "host": the kind the host's TCP uses (bbr, reno, else cubic). */
  congestionControl?: H3CongestionControl;
  /** Handshake timeout in ms. Default 5000. */
  handshakeTimeoutMs?: number;
  /**
   * Server: response body bytes held per connection and per endpoint, and how long held bytes
   * may go without an ACK before the connection is closed. Default 64 MiB, 256 MiB, 30000 ms.
   */
  sendQueue?: { connBytes: number; totalBytes: number; stallMs: number };
  /** Server: validate new client addresses with Retry and hand out NEW_TOKEN. Default false. */
  retry?: boolean;
  /** Server: lifetime of session tickets in seconds (one per connection); 0 sends none. Default 0. */
  ticketLifetimeSeconds?: number;
  /** Server: accept 0-RTT; client: attempt it when resuming. Default false. */
  earlyData?: boolean;
  /** Server: anti-replay window for 0-RTT ClientHellos in ms. Default 10000. */
  antiReplayWindowMs?: number;
  /** ECN: mark datagrams as QUIC's validation allows and report the marks received. Default true. */
  ecn?: boolean;
  /** Client: a NEW_TOKEN from an earlier connection to this server, to skip its Retry. Default none. */
  token?: Uint8Array;
  /** QUIC versions by preference, v1 among them (see {@linkcode H3QuicVersion}). Default `["v1"]`. */
  quicVersions?: H3QuicVersion[];
}

/**
 * QUIC versions the module speaks: v1 (RFC 9000) and the provisional v2 draft
 * (0x709a50c4) that ngtcp2 0.12.1 implements. RFC 9369's v2 (0x6b3343cf) is not in that
 * library version.
 */
export type H3QuicVersion = "v1" | "v2draft";

const QUIC_VERSIONS: Record<H3QuicVersion, number> = { v1: 0x1, v2draft: 0x709a50c4 };

/** Congestion controllers of the HTTP/3 module; "host" follows net.ipv4.tcp_congestion_control. */
export type H3CongestionControl = "host" | "reno" | "cubic" | "bbr" | "bbr2";

const CC_CODES: Record<H3CongestionControl, number> = {
  host: 0,
  reno: 1,
  cubic: 2,
  bbr: 3,
  bbr2: 4,
};

/** TLS and transport settings shared by the connections made from it. */
export class H3Config {
  #sym: Sbh3Symbols;
  #ptr: Deno.PointerValue;

  constructor(sym: Sbh3Symbols, isServer: boolean, options: H3ConfigOptions = {}) {
    this.#sym = sym;
    const ptr = sym.sbh3_config_new(isServer ? 1 : 0);
    if (ptr === null) throw new H3Error(H3_ERR.NOMEM, "Cannot create HTTP/3 config");
    this.#ptr = ptr;
    try {
      if (options.certPem && options.keyPem) {
        const c = encoder.encode(options.certPem), k = encoder.encode(options.keyPem);
        const rc = sym.sbh3_config_set_cert(ptr, c, BigInt(c.length), k, BigInt(k.length));
        if (rc < 0) throw new H3Error(rc, "Cannot load the certificate or private key");
      }
      for (const pem of options.caPem ?? []) {
        const b = encoder.encode(pem);
        const rc = sym.sbh3_config_add_ca(ptr, b, BigInt(b.length));
        if (rc < 0) throw new H3Error(rc, "Cannot load a CA certificate");
      }
      if (options.verifyPeer !== undefined) {
        check(sym.sbh3_config_set_verify(ptr, options.verifyPeer ? 1 : 0), "set_verify");
      }
      if (options.idleTimeoutMs !== undefined) {
        check(sym.sbh3_config_set_idle_timeout(ptr, options.idleTimeoutMs), "set_idle_timeout");
      }
      if (options.maxUdpPayload !== undefined) {
        check(
          sym.sbh3_config_set_max_udp_payload(ptr, options.maxUdpPayload),
          "set_max_udp_payload",
        );
      }
      if (options.maxRecvUdpPayload !== undefined) {
        check(
          sym.sbh3_config_set_max_recv_udp_payload(ptr, options.maxRecvUdpPayload),
          "set_max_recv_udp_payload",
        );
      }
      if (options.congestionControl !== undefined) {
        const code = CC_CODES[options.congestionControl];
        if (code === undefined) {
          throw new TypeError(`Unknown congestion controller "${options.congestionControl}"`);
        }
        check(sym.sbh3_config_set_cc(ptr, code), "set_cc");
      }
      if (options.handshakeTimeoutMs !== undefined) {
        check(
          sym.sbh3_config_set_handshake_timeout(ptr, options.handshakeTimeoutMs),
          "set_handshake_timeout",
        );
      }
      if (options.sendQueue !== undefined) {
        const q = options.sendQueue;
        check(
          sym.sbh3_config_set_send_queue(ptr, BigInt(q.connBytes), BigInt(q.totalBytes), q.stallMs),
          "set_send_queue",
        );
      }
      if (options.retry) check(sym.sbh3_config_set_retry(ptr, 1), "set_retry");
      if (options.ecn === false) check(sym.sbh3_config_set_ecn(ptr, 0), "set_ecn");
      if (options.quicVersions !== undefined) {
        const codes = options.quicVersions.map((v) => {
          const code = QUIC_VERSIONS[v];
          if (code === undefined) throw new TypeError(`Unknown QUIC version "${v}"`);
          return code;
        });
        const list = new Uint32Array(codes);
        const rc = sym.sbh3_config_set_versions(ptr, list, BigInt(list.length));
        if (rc < 0) {
          throw new RangeError(
            `QUIC versions must include v1, got ${options.quicVersions.join(",")}`,
          );
        }
      }
      if (options.token?.length) {
        const t = options.token as Uint8Array<ArrayBuffer>;
        check(sym.sbh3_config_set_token(ptr, t, BigInt(t.length)), "set_token");
      }
      if (options.maxBodyBytes !== undefined) {
        check(sym.sbh3_config_set_max_body(ptr, BigInt(options.maxBodyBytes)), "set_max_body");
      }
      if (isServer && options.ticketLifetimeSeconds !== undefined) {
        check(sym.sbh3_config_set_tickets(ptr, options.ticketLifetimeSeconds), "set_tickets");
      }
      if (options.earlyData) {
        check(
          sym.sbh3_config_set_early_data(ptr, 1, options.antiReplayWindowMs ?? 10_000),
          "set_early_data",
        );
      }
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** The explicit send size (`maxUdpPayload`), or 0 when path MTU discovery applies. */
  get maxUdpPayload(): number {
    return check(this.#sym.sbh3_config_get_max_udp_payload(this.pointer), "get_max_udp_payload");
  }

  /** The native handle, for constructors in this folder. */
  get pointer(): Deno.PointerValue {
    if (this.#ptr === null) throw new H3Error(H3_ERR.INVALID, "HTTP/3 config is closed");
    return this.#ptr;
  }

  /** Drops this reference; connections made from it keep their own. Idempotent. */
  close(): void {
    if (this.#ptr !== null) {
      this.#sym.sbh3_config_free(this.#ptr);
      this.#ptr = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Addresses of a client connection. */
export interface ClientAddresses {
  /** Name verified against the server certificate (and sent as SNI unless an IP). */
  serverName: string;
  /** Local IP and port of the UDP socket. */
  localIp: string;
  localPort: number;
  /** Server IP and port. */
  remoteIp: string;
  remotePort: number;
}

/** One client QUIC connection. */
export class H3ClientConn {
  #sym: Sbh3Symbols;
  #ptr: Deno.PointerValue;
  #events = new EventReader();
  #poll = (b: Uint8Array, cap: number) =>
    this.#sym.sbh3_conn_poll(this.#ptr, b as Uint8Array<ArrayBuffer>, BigInt(cap));

  constructor(sym: Sbh3Symbols, config: H3Config, addr: ClientAddresses) {
    this.#sym = sym;
    const ptr = sym.sbh3_conn_new_client(
      config.pointer,
      cstr(addr.serverName),
      cstr(addr.localIp),
      addr.localPort,
      cstr(addr.remoteIp),
      addr.remotePort,
    );
    if (ptr === null) {
      throw new H3Error(
        H3_ERR.INVALID,
        `Cannot start an HTTP/3 connection to ${addr.remoteIp}:${addr.remotePort}`,
      );
    }
    this.#ptr = ptr;
  }

  #live(): Deno.PointerValue {
    if (this.#ptr === null) throw new H3Error(H3_ERR.CLOSED, "HTTP/3 connection is freed");
    return this.#ptr;
  }

  /** Feeds one datagram; returns 0 or a negative code (the connection reports CLOSED as an event). */
  recv(data: Uint8Array): number {
    return this.#sym.sbh3_conn_recv(
      this.#live(),
      data as Uint8Array<ArrayBuffer>,
      BigInt(data.length),
    );
  }

  /** Writes the next datagram into `out`; returns its length or 0 when there is none. */
  send(out: Uint8Array): number {
    const n = this.#sym.sbh3_conn_send(
      this.#live(),
      out as Uint8Array<ArrayBuffer>,
      BigInt(out.length),
    );
    if (n === H3_ERR.DONE) return 0;
    return check(n, "send");
  }

  /** Milliseconds until {@linkcode onTimeout} is due, or -1 when no timer is pending. */
  timeoutMs(): number {
    if (this.#ptr === null) return -1;
    const n = this.#sym.sbh3_conn_timeout_ms(this.#ptr);
    return n < 0 ? -1 : n;
  }

  /** Runs expired timers. */
  onTimeout(): void {
    this.#sym.sbh3_conn_on_timeout(this.#live());
  }

  /** Submits a request; returns the stream id, or -1 when no stream can be opened yet. */
  request(headers: HeaderList, body: Uint8Array): number {
    const hb = encodeHeaderBlock(headers);
    return this.requestBlock(hb, hb.length, body);
  }

  /**
   * Opens a request stream with a header block already encoded (the first
   * `length` bytes of `block`, copied before this returns) and `body`;
   * returns the stream id, or -1 when no stream is available yet.
   */
  requestBlock(block: Uint8Array, length: number, body: Uint8Array): number {
    const n = this.#sym.sbh3_conn_request(
      this.#live(),
      block as Uint8Array<ArrayBuffer>,
      BigInt(length),
      (body.length ? body : EMPTY) as Uint8Array<ArrayBuffer>,
      BigInt(body.length),
    );
    const id = Number(n);
    if (id === H3_ERR.STREAM_BLOCKED) return -1;
    return check(id, "request");
  }

  /** Resets a stream the caller gave up on. */
  cancel(streamId: number): void {
    if (this.#ptr !== null) this.#sym.sbh3_conn_cancel(this.#ptr, BigInt(streamId));
  }

  /** Returns the next event, or null. */
  poll(): H3Event | null {
    this.#live();
    return this.#events.read(this.#poll);
  }

  /** Starts a graceful close; drain {@linkcode send} afterwards. */
  shutdown(): void {
    if (this.#ptr !== null) this.#sym.sbh3_conn_close(this.#ptr);
  }

  /** Why the connection closed, as text (empty while open). */
  errorText(): string {
    if (this.#ptr === null) return "";
    const b = new Uint8Array(512);
    const n = this.#sym.sbh3_conn_error(this.#ptr, b, BigInt(b.length));
    return n > 0 ? decoder.decode(b.subarray(0, n)) : "";
  }

  /**
   * Feeds `first` (a datagram the caller received, if any), receives every
   * further datagram ready on `sock`, runs due timers and sends all that is
   * due, in one call; returns how many datagrams came in.
   */
  io(sock: H3Socket, first?: Uint8Array): number {
    return this.#sym.sbh3_conn_io(
      this.#live(),
      sock.pointer,
      (first ?? EMPTY) as Uint8Array<ArrayBuffer>,
      BigInt(first ? first.length : 0),
    );
  }

  /** The last NEW_TOKEN the server gave this connection, or null. */
  token(): Uint8Array | null {
    if (this.#ptr === null) return null;
    const b = new Uint8Array(512);
    const n = this.#sym.sbh3_conn_token(this.#ptr, b, BigInt(b.length));
    return n > 0 ? b.slice(0, n) : null;
  }

  /** Starts a 1-RTT key update; false when not allowed yet (handshake unconfirmed, last update unacknowledged). */
  updateKey(): boolean {
    const rc = this.#sym.sbh3_conn_update_key(this.#live());
    if (rc === H3_ERR.STREAM_BLOCKED) return false;
    check(rc, "update_key");
    return true;
  }

  /** Datagram counters and path sizes of this connection (null once freed). */
  stats(): H3DatagramStats | null {
    if (this.#ptr === null) return null;
    return readStats((out, n) => this.#sym.sbh3_conn_stats(this.#ptr, out, n));
  }

  /** Offers a ticket from {@linkcode takeTicket} (before the first send); throws `H3Error` when refused. */
  resume(ticket: Uint8Array): void {
    check(
      this.#sym.sbh3_conn_resume(
        this.#live(),
        ticket as Uint8Array<ArrayBuffer>,
        BigInt(ticket.length),
      ),
      "resume",
    );
  }

  /** The newest ticket the server sent, taken (it is offered once), or undefined. */
  takeTicket(): Uint8Array | undefined {
    if (this.#ptr === null) return undefined;
    let buf = new Uint8Array(8192);
    let n = this.#sym.sbh3_conn_ticket(this.#ptr, buf, BigInt(buf.length));
    if (n === H3_ERR.BUFFER_TOO_SHORT) {
      buf = new Uint8Array(65536);
      n = this.#sym.sbh3_conn_ticket(this.#ptr, buf, BigInt(buf.length));
    }
    return n > 0 ? buf.slice(0, n) : undefined;
  }

  /** Milliseconds from this connection's creation to its first response header, or undefined before one. */
  firstResponseMs(): number | undefined {
    if (this.#ptr === null) return undefined;
    const us = Number(this.#sym.sbh3_conn_first_response_us(this.#ptr));
    return us < 0 ? undefined : us / 1000;
  }

  /** The {@linkcode H3_TLS_STATE} bits (0 once freed). */
  tlsState(): number {
    return this.#ptr === null ? 0 : this.#sym.sbh3_conn_tls_state(this.#ptr);
  }

  /** What the handshake negotiated; null before it completed or once freed. */
  tlsInfo(): TlsConnectionInfo | null {
    const ptr = this.#ptr;
    if (ptr === null) return null;
    return readTlsInfo(
      this.#sym.sbh3_conn_tls_state(ptr),
      (kind, b) => this.#sym.sbh3_conn_tls_info(ptr, kind, b, BigInt(b.length)),
      (sent) => Number(this.#sym.sbh3_conn_handshake_bytes(ptr, sent)),
    );
  }

  /** RFC 5705 / RFC 8446 §7.5 exporter; throws `RangeError` before the handshake completed or once freed. */
  exportKeyingMaterial(label: string, context: Uint8Array | undefined, length: number): Uint8Array {
    const ptr = this.#ptr;
    if (ptr === null) throw new RangeError("The HTTP/3 connection is closed");
    return runExporter(label, context, length, (l, c, cLen, out) =>
      this.#sym.sbh3_conn_export(
        ptr,
        l,
        BigInt(l.length),
        c,
        BigInt(cLen),
        out,
        BigInt(out.length),
      ));
  }

  /** Request streams the shim still holds state for (0 once freed). */
  streamCount(): number {
    return this.#ptr === null ? 0 : Math.max(0, this.#sym.sbh3_conn_stream_count(this.#ptr));
  }

  /** Frees the connection. Idempotent. */
  close(): void {
    if (this.#ptr !== null) {
      this.#sym.sbh3_conn_free(this.#ptr);
      this.#ptr = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Where a server datagram goes. */
export type Destination = Deno.NetAddr;

/** A server endpoint: demultiplexes datagrams to connections it creates. */
export class H3ServerEndpoint {
  #sym: Sbh3Symbols;
  #ptr: Deno.PointerValue;
  #events = new EventReader();
  #meta = new Uint8Array(64);
  #metaView = new DataView(this.#meta.buffer);
  #ipCache = new Map<string, Uint8Array<ArrayBuffer>>();
  #dstCache = new Map<number, Destination>();
  #poll = (b: Uint8Array, cap: number) =>
    this.#sym.sbh3_server_poll(this.#ptr, b as Uint8Array<ArrayBuffer>, BigInt(cap));

  constructor(sym: Sbh3Symbols, config: H3Config, localIp: string, localPort: number) {
    this.#sym = sym;
    const ptr = sym.sbh3_server_new(config.pointer, cstr(localIp), localPort);
    if (ptr === null) {
      throw new H3Error(
        H3_ERR.INVALID,
        `Cannot create an HTTP/3 server on ${localIp}:${localPort}`,
      );
    }
    this.#ptr = ptr;
  }

  #live(): Deno.PointerValue {
    if (this.#ptr === null) throw new H3Error(H3_ERR.CLOSED, "HTTP/3 server is freed");
    return this.#ptr;
  }

  #ip(hostname: string): Uint8Array<ArrayBuffer> {
    let b = this.#ipCache.get(hostname);
    if (!b) {
      if (this.#ipCache.size > 1024) this.#ipCache.clear();
      b = cstr(hostname);
      this.#ipCache.set(hostname, b);
    }
    return b;
  }

  /** Feeds one datagram; returns the connection id (> 0) or a negative code. */
  recv(data: Uint8Array, hostname: string, port: number): number {
    return this.#sym.sbh3_server_recv(
      this.#live(),
      data as Uint8Array<ArrayBuffer>,
      BigInt(data.length),
      this.#ip(hostname),
      port,
    );
  }

  /** Writes the next datagram into `out`; returns its length and destination, or null. */
  send(out: Uint8Array): { length: number; connId: number; to: Destination } | null {
    const n = this.#sym.sbh3_server_send(
      this.#live(),
      out as Uint8Array<ArrayBuffer>,
      BigInt(out.length),
      this.#meta,
      BigInt(this.#meta.length),
    );
    if (n === H3_ERR.DONE) return null;
    check(n, "send");
    const connId = this.#metaView.getUint32(0, true);
    const port = this.#metaView.getUint16(4, true);
    let to = connId ? this.#dstCache.get(connId) : undefined;
    if (!to || to.port !== port) {
      const end = this.#meta.indexOf(0, 6);
      to = { transport: "udp", hostname: decoder.decode(this.#meta.subarray(6, end)), port };
      if (connId) this.#dstCache.set(connId, to);
    }
    return { length: n, connId, to };
  }

  /**
   * Feeds `first` from `from` (a datagram the caller received, if any),
   * receives every further datagram ready on `sock`, runs due timers and sends
   * all that is due for every connection, in one call; returns how many
   * datagrams came in.
   */
  io(sock: H3Socket, first?: Uint8Array, from?: Deno.NetAddr): number {
    const ok = first !== undefined && from !== undefined;
    return this.#sym.sbh3_server_io(
      this.#live(),
      sock.pointer,
      (ok ? first : EMPTY) as Uint8Array<ArrayBuffer>,
      BigInt(ok ? first.length : 0),
      ok ? this.#ip(from.hostname) : EMPTY_CSTR,
      ok ? from.port : 0,
    );
  }

  /** Forgets the cached destination of a closed connection. */
  forget(connId: number): void {
    this.#dstCache.delete(connId);
  }

  /** Milliseconds until {@linkcode onTimeout} is due, or -1. */
  timeoutMs(): number {
    if (this.#ptr === null) return -1;
    const n = this.#sym.sbh3_server_timeout_ms(this.#ptr);
    return n < 0 ? -1 : n;
  }

  /** Runs expired timers and frees finished connections. */
  onTimeout(): void {
    this.#sym.sbh3_server_on_timeout(this.#live());
  }

  /** Returns the next event of any connection, or null. */
  poll(): H3Event | null {
    this.#live();
    return this.#events.read(this.#poll);
  }

  /** Sends a response; returns 0 or a negative code (for example when the stream is gone). */
  respond(connId: number, streamId: number, headers: HeaderList, body: Uint8Array): number {
    const hb = encodeHeaderBlock(headers);
    return this.#sym.sbh3_server_respond(
      this.#live(),
      connId,
      BigInt(streamId),
      hb,
      BigInt(hb.length),
      (body.length ? body : EMPTY) as Uint8Array<ArrayBuffer>,
      BigInt(body.length),
    );
  }

  /** Refuses new connections and sends GOAWAY. */
  shutdown(): void {
    this.#sym.sbh3_server_shutdown(this.#live());
  }

  /** Closes every connection with H3_NO_ERROR; drain {@linkcode send} afterwards. */
  closeAll(): void {
    this.#sym.sbh3_server_close_all(this.#live());
  }

  /** Request streams not yet closed. */
  openStreams(): number {
    return this.#ptr === null ? 0 : this.#sym.sbh3_server_open_streams(this.#ptr);
  }

  /** Counters of connection `connId`, or with 0 totals over every connection so far; null when unknown. */
  stats(connId = 0): H3DatagramStats | null {
    if (this.#ptr === null) return null;
    return readStats((out, n) => this.#sym.sbh3_server_stats(this.#ptr, connId, out, n));
  }

  /** The peer address of connection `connId`, or null when it is gone. */
  peer(connId: number): Deno.NetAddr | null {
    if (this.#ptr === null) return null;
    const meta = new Uint8Array(64);
    if (this.#sym.sbh3_server_peer(this.#ptr, connId, meta, BigInt(meta.length)) < 0) return null;
    const port = new DataView(meta.buffer).getUint16(4, true);
    const end = meta.indexOf(0, 6);
    return { transport: "udp", hostname: decoder.decode(meta.subarray(6, end)), port };
  }

  /** What connection `connId`'s handshake negotiated; null before it completed or when it is gone. */
  tlsInfo(connId: number): TlsConnectionInfo | null {
    const ptr = this.#ptr;
    if (ptr === null) return null;
    return readTlsInfo(
      this.#sym.sbh3_server_tls_state(ptr, connId),
      (kind, b) => this.#sym.sbh3_server_tls_info(ptr, connId, kind, b, BigInt(b.length)),
      (sent) => Number(this.#sym.sbh3_server_handshake_bytes(ptr, connId, sent)),
    );
  }

  /** The exporter of connection `connId`; throws `RangeError` when it is gone or not established. */
  exportKeyingMaterial(
    connId: number,
    label: string,
    context: Uint8Array | undefined,
    length: number,
  ): Uint8Array {
    const ptr = this.#ptr;
    if (ptr === null) throw new RangeError("The HTTP/3 server is closed");
    return runExporter(label, context, length, (l, c, cLen, out) =>
      this.#sym.sbh3_server_export(
        ptr,
        connId,
        l,
        BigInt(l.length),
        c,
        BigInt(cLen),
        out,
        BigInt(out.length),
      ));
  }

  /** Connections held, including closing ones. */
  connCount(): number {
    return this.#ptr === null ? 0 : this.#sym.sbh3_server_conn_count(this.#ptr);
  }

  /** Frees the server and all its connections. Idempotent. */
  close(): void {
    if (this.#ptr !== null) {
      this.#sym.sbh3_server_free(this.#ptr);
      this.#ptr = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** A datagram received through Deno: its bytes (valid until the next receive) and sender. */
export type Datagram = [Uint8Array, Deno.NetAddr];

/**
 * A UDP socket for {@linkcode H3ClientConn.io} and {@linkcode H3ServerEndpoint.io}:
 * a `Deno.DatagramConn` (so Deno's reactor, on the main thread, reports
 * readiness) that the shim adopts by its local address for batched
 * recvmmsg/sendmmsg. `receive()` awaits one datagram through Deno; the io
 * call then drains the rest. The shim never closes the socket; `close()`
 * drops the shim's handle first, then closes the socket, which ends a pending
 * `receive()`.
 */
export class H3Socket {
  #sym: Sbh3Symbols;
  #ptr: Deno.PointerValue;
  #udp: Deno.DatagramConn;
  #buf = new Uint8Array(65536);
  /** Bound local address (as Deno reports it) and port. */
  readonly hostname: string;
  readonly port: number;

  /** Opens a socket bound to `ip:port` (0: any free port); throws H3Error (SOCKET) on failure. */
  constructor(sym: Sbh3Symbols, ip: string, port: number) {
    this.#sym = sym;
    try {
      this.#udp = Deno.listenDatagram({ transport: "udp", hostname: ip, port });
    } catch (err) {
      throw new H3Error(
        H3_ERR.SOCKET,
        `Cannot bind a UDP socket to ${ip}:${port}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const addr = this.#udp.addr as Deno.NetAddr;
    this.hostname = addr.hostname;
    this.port = addr.port;
    const ptr = sym.sbh3_udp_adopt(cstr(addr.hostname), addr.port);
    if (ptr === null) {
      this.#udp.close();
      throw new H3Error(
        H3_ERR.SOCKET,
        `Cannot find the UDP socket bound to ${addr.hostname}:${addr.port} among this process's descriptors`,
      );
    }
    this.#ptr = ptr;
  }

  /** The native handle, for the io calls in this folder. */
  get pointer(): Deno.PointerValue {
    if (this.#ptr === null) throw new H3Error(H3_ERR.CLOSED, "UDP socket is closed");
    return this.#ptr;
  }

  /** Connects to the peer, so that an ICMP port unreachable ends the connection fast. */
  connect(ip: string, port: number): void {
    check(this.#sym.sbh3_udp_connect(this.pointer, cstr(ip), port), "udp_connect");
  }

  /**
   * Awaits the next datagram through Deno's reactor. Resolves with it; with
   * an empty datagram when the receive reported ECONNREFUSED (recorded for
   * the next io call, which reports REFUSED); with null once closed. Other
   * receive errors reject.
   */
  async receive(): Promise<Datagram | null> {
    if (this.#ptr === null) return null;
    try {
      return (await this.#udp.receive(this.#buf)) as Datagram;
    } catch (err) {
      if (this.#ptr === null) return null;
      if (err instanceof Deno.errors.ConnectionRefused) {
        this.#sym.sbh3_udp_refused(this.#ptr);
        return [EMPTY.subarray(0, 0), this.#udp.addr as Deno.NetAddr];
      }
      throw err;
    }
  }

  /** Frees the shim's handle, then closes the socket. Idempotent. */
  close(): void {
    if (this.#ptr === null) return;
    this.#sym.sbh3_udp_free(this.#ptr);
    this.#ptr = null;
    this.#udp.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Reads the shim and library versions. */
export function shimVersion(sym: Sbh3Symbols): string {
  const b = new Uint8Array(256);
  const n = check(sym.sbh3_version(b, BigInt(b.length)), "version");
  return decoder.decode(b.subarray(0, n));
}
