/**
 * Contracts every transport implements: one server, one client, one TLS
 * material type. Adding a transport never touches the handler.
 */
import type { SbiHandler, SbiHeaders } from "../handler/types.ts";
import type { TlsConnection, TlsMaterial } from "./tls.ts";
import type { TicketCache } from "./ticket_cache.ts";
import type { ByteBudget } from "./byte_budget.ts";
import type { NativeIo } from "./native/io_loop.ts";

import { type TransportName, TRANSPORTS } from "../lib/transport_names.ts";

export { type TransportName, TRANSPORTS };

/**
 * The implementation family under a transport. `native`: h2 on nghttp2 and
 * h3 on ngtcp2 + nghttp3, TLS from GnuTLS in both, each a small C module
 * driven through FFI with the same I/O shape (the matched stack every
 * comparison runs on by default). `deno`: `Deno.serve` and `fetch` on hyper
 * and rustls for h2, Deno's QUIC (quinn, rustls) with nghttp3 framing for
 * h3: what a Deno-based NF would run, and the study's own pairing.
 */
export type StackName = "native" | "deno";

/** Every stack, default first. */
export const STACKS: readonly StackName[] = ["native", "deno"];

/** Parses a stack name; throws `RangeError` naming the choices. */
export function parseStack(text: string): StackName {
  if ((STACKS as readonly string[]).includes(text)) return text as StackName;
  throw new RangeError(`Unknown stack ${text} (choose from ${STACKS.join(", ")})`);
}

/** What a connection ran on, as a report names it. */
export interface ConnectionInfo {
  /** The stack. */
  stack: StackName;
  /** Libraries and versions, e.g. `nghttp2 1.52.0` or `ngtcp2 0.12.1, nghttp3 0.8.0`. */
  implementation: string;
  /** Negotiated TLS, when the connection is over TLS and the stack exposes it. */
  tls?: {
    /** TLS library and version, e.g. `GnuTLS 3.7.9` or `rustls`. */
    library: string;
    /** Protocol version, e.g. `TLS1.3`; undefined when the runtime does not expose it. */
    version?: string;
    /** Cipher suite, e.g. `TLS_AES_128_GCM_SHA256`. */
    suite?: string;
    /** Key-exchange group, e.g. `X25519`. */
    group?: string;
    /** Whether the session was resumed. */
    resumed?: boolean;
    /** 0-RTT: `accepted` or `rejected` when early data was sent, else `none`. */
    earlyData?: "none" | "accepted" | "rejected";
  };
  /** Largest UDP payload on the connection so far, either direction (QUIC), in bytes. */
  maxDatagramBytes?: number;
  /** TCP maximum segment size of the connection, in bytes. */
  tcpMssBytes?: number;
}

/** Options for starting a server. */
export interface ServerOptions {
  /** Address to bind. Default `127.0.0.1`. */
  hostname?: string;
  /** Port to bind; 0 picks a free one. Default 0. */
  port?: number;
  /** Certificate, key and (for mTLS) CA. Required for h2-tls and h3. */
  tls?: TlsMaterial;
  /** Implementation family. Default `native`. */
  stack?: StackName;
  /**
   * Largest request body; a larger one gets the handler's 413 (`bodyTooLarge`)
   * as soon as the transport sees it. Give the handler the same number.
   * Default {@linkcode DEFAULT_SERVER_LIMITS}`.maxBodyBytes` (the handler's
   * `DEFAULT_MAX_BODY_BYTES`).
   */
  maxBodyBytes?: number;
  /**
   * Largest request header section (name + value + 32 bytes per field, as
   * RFC 9113 and RFC 9114 count it), advertised in SETTINGS; a larger one
   * resets its stream (h2 ENHANCE_YOUR_CALM, h3 H3_EXCESSIVE_LOAD) and the
   * connection keeps serving. Default
   * {@linkcode DEFAULT_SERVER_LIMITS}`.maxHeaderSectionBytes` (16 KiB).
   */
  maxHeaderSectionBytes?: number;
  /**
   * TLS transports, native stack: called once per connection after its
   * handshake, with the peer's address, what was negotiated and the
   * connection's exporter (which throws `RangeError` once the connection
   * closed). Default none.
   */
  onTls?: (conn: TlsConnection) => void;
  /**
   * TLS transports, native stack: lifetime of the TLS 1.3 session tickets sent
   * (one per connection), in seconds; the ticket keys rotate with the same
   * period (GnuTLS derives them from one master key per server). 0 sends none.
   * Default {@linkcode DEFAULT_SERVER_LIMITS}`.ticketLifetimeSeconds`.
   */
  ticketLifetimeSeconds?: number;
  /**
   * TCP connections one listener holds at once; newer ones beyond it are
   * closed (h3 has no cap of its own). Default
   * {@linkcode DEFAULT_SERVER_LIMITS}`.maxConnections`.
   */
  maxConnections?: number;
  /**
   * A TCP connection must be ready for requests this many ms after it was
   * accepted: TLS handshake, HTTP/2 preface and SETTINGS done (native stack);
   * its first request started (deno stack, whose runtime shows neither).
   * Late ones are closed. Default {@linkcode DEFAULT_SERVER_LIMITS}`.handshakeTimeoutMs`.
   */
  handshakeTimeoutMs?: number;
  /**
   * A connection with no request in flight and no input for this many ms is
   * closed (h3: the QUIC idle timeout). Default
   * {@linkcode DEFAULT_SERVER_LIMITS}`.idleTimeoutMs`.
   */
  idleTimeoutMs?: number;
  /**
   * A response whose queued bytes the peer takes none of for this many ms is
   * reset: the stream on the native h2 server, the whole connection on the
   * deno stack (`Deno.serve` cannot reset one stream). Default
   * {@linkcode DEFAULT_SERVER_LIMITS}`.stallTimeoutMs`.
   */
  stallTimeoutMs?: number;
  /**
   * Request-body bytes held at once, shared by the servers that get the same
   * budget (`lab serve` gives all of them one); a body that does not fit is
   * answered 503 NF_CONGESTION (`overloaded`). Default one budget per process
   * (`defaultBodyBudget`, {@linkcode DEFAULT_SERVER_LIMITS}`.maxInflightBodyBytes`).
   */
  bodyBudget?: ByteBudget;
  /**
   * Response bytes queued while peers do not read. On the deno stack the
   * budget is shared by its servers (a large response waits for room); the
   * native h2 and h3 servers each cap what they queue at the budget's limit
   * (h2 resets a response past it while its peer's window is closed, h3 makes
   * it wait), besides their own cap per connection. Default
   * `defaultResponseBudget` ({@linkcode DEFAULT_SERVER_LIMITS}`.maxQueuedResponseBytes`).
   */
  responseBudget?: ByteBudget;
  /**
   * How long `close()` waits for in-flight requests before closing
   * connections, ms (native stack; `Deno.serve` drains by itself). Default
   * {@linkcode DEFAULT_SERVER_LIMITS}`.drainMs`.
   */
  drainMs?: number;
  /**
   * Native stack: who reads and writes the sockets. `runtime`, Deno's
   * reactor, wakes JavaScript for every read; `module`, the native module's
   * own I/O thread, reads, runs the timers and writes by itself and wakes
   * JavaScript once per batch of complete requests (h2c, h2 over TLS, h3).
   * The deno stack ignores it. Default: the `SBILAB_NATIVE_IO` environment
   * variable, else `runtime`.
   */
  io?: NativeIo;
  /** Called with errors the transport swallowed (handler failures, accept errors). Default no-op. */
  onError?: (err: unknown) => void;
}

/** A running server. */
export interface SbiServer {
  /** Which transport it speaks. */
  readonly transport: TransportName;
  /** Bound address. */
  readonly hostname: string;
  /** Bound port. */
  readonly port: number;
  /** Base URL, for example `https://127.0.0.1:7778`. */
  readonly url: string;
  /** Stop accepting, finish in-flight requests, release the socket. Idempotent. */
  close(): Promise<void>;
}

/** Starts a server for one transport around a handler. */
export type ServerFactory = (handler: SbiHandler, options?: ServerOptions) => Promise<SbiServer>;

/** Options for creating a client bound to one origin. */
export interface ClientOptions {
  /** TLS trust and optional client certificate. Required for h2-tls and h3. */
  tls?: TlsMaterial;
  /** NF type named in `User-Agent` (TS 29.500 §5.2.2.2). Default `SMF`. */
  nfType?: string;
  /** Default per-request timeout in ms. Default 5000. */
  timeoutMs?: number;
  /**
   * Implementation family. `native`: nghttp2 (h2) or ngtcp2 (h3) through
   * FFI; `deno`: Deno's `fetch` for h2, Deno's QUIC for h3. Default `native`, or the
   * `SBILAB_STACK` environment variable when set.
   */
  stack?: StackName;
  /** TLS transports, native stack: offer a saved session ticket and keep new ones. Default true. */
  resumption?: boolean;
  /**
   * h3: when resuming, send safe requests (GET, HEAD, OPTIONS) in 0-RTT;
   * other methods always wait for the handshake. Default true.
   */
  earlyData?: boolean;
  /** Where tickets are kept. Default: one cache shared by the process's native clients. */
  ticketCache?: TicketCache;
  /**
   * A connection whose TLS (or QUIC) handshake is not done by then fails, ms.
   * Default {@linkcode DEFAULT_CLIENT_LIMITS}`.handshakeTimeoutMs` (10000), every stack.
   */
  handshakeTimeoutMs?: number;
  /**
   * Largest response body accepted; a larger one fails its request. Default
   * {@linkcode DEFAULT_CLIENT_LIMITS}`.maxBodyBytes` (64 MiB), every stack.
   */
  maxBodyBytes?: number;
  /**
   * Largest response header section (name + value + 32 bytes per field),
   * advertised in SETTINGS where the stack can. Default
   * {@linkcode DEFAULT_CLIENT_LIMITS}`.maxHeaderSectionBytes` (16 KiB).
   */
  maxHeaderSectionBytes?: number;
}

/**
 * When the phases of the first request on a new connection ended, in ms from
 * the moment the client started connecting. A request on a fresh client
 * starts connecting at once, so these are the set-up costs a cold request pays.
 */
export interface SetupTimings {
  /** The transport is up: TCP connect done; QUIC: the server's first datagram received. */
  connectMs: number;
  /** The TLS handshake completed at the client (undefined on h2c). */
  tlsMs?: number;
  /** The first bytes that came in after the request went out. */
  firstByteMs: number;
  /** The response was complete. */
  totalMs: number;
}

/** One request through a client. */
export interface ClientRequest {
  /** HTTP method. Default `GET`. */
  method?: string;
  /** Path and query, for example `/nbench/v1/payload?size=256`. */
  path: string;
  /** Extra request headers (any case). */
  headers?: Record<string, string>;
  /** Request body. */
  body?: Uint8Array;
  /** Per-request timeout in ms; overrides the client's default. */
  timeoutMs?: number;
  /**
   * Called once, before the request goes out, with the header fields the
   * client sends (lower-case names): the caller's merged with the SBI headers
   * it added (`traceparent`, `3gpp-sbi-sender-timestamp`, `3gpp-sbi-max-rsp-time`,
   * `user-agent`). Pseudo-headers are not included. Default: not called.
   */
  onRequestHeaders?: (headers: Readonly<Record<string, string>>) => void;
}

/** A response received by a client. */
export interface ClientResponse {
  /** HTTP status code. */
  status: number;
  /** Response headers, lower-case names. */
  headers: SbiHeaders;
  /** Response body bytes. */
  body: Uint8Array;
}

/** A client bound to one origin, reusing one connection. */
export interface SbiClient {
  /** Which transport it speaks. */
  readonly transport: TransportName;
  /** Sends one request; rejects with `TimeoutError` after the timeout. */
  request(request: ClientRequest): Promise<ClientResponse>;
  /** Closes the connection. Idempotent. */
  close(): Promise<void>;
  /** What the current connection runs on (after a request), when known. */
  connectionInfo?(): ConnectionInfo | undefined;
  /** Native stack: the set-up phases of the current (or last) connection's first request, once complete. */
  setupTimings?(): SetupTimings | undefined;
  /**
   * TLS transports on the native stack: the RFC 5705 / RFC 8446 §7.5 exporter
   * of the current connection. Throws (or rejects with) `RangeError` when no
   * TLS connection is open.
   */
  exportKeyingMaterial?(
    label: string,
    context: Uint8Array | undefined,
    length: number,
  ): Uint8Array | Promise<Uint8Array>;
}

/** Creates a client for one transport and origin (`http://h:p` or `https://h:p`). */
export type ClientFactory = (origin: string, options?: ClientOptions) => Promise<SbiClient>;

/** Raised when a request does not complete within its timeout. */
export class TimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`Request timed out after ${timeoutMs} ms`);
    this.name = "TimeoutError";
  }
}

/** Raised when the connection fails or is reset; the next request reconnects. */
export class TransportError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TransportError";
  }
}
