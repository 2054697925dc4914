/**
 * Contracts every transport implements: one server, one client, one TLS
 * material type. Adding a transport never touches the handler.
 */
import type { SbiHandler, SbiHeaders } from "../handler/types.ts";
import type { TlsMaterial } from "./tls.ts";

/** The transports sbilab knows. */
export type TransportName = "h2c" | "h2-tls" | "h3";

/** Every transport name, in report order. */
export const TRANSPORTS: readonly TransportName[] = ["h2c", "h2-tls", "h3"];

/** Options for starting a server. */
export interface ServerOptions {
  /** Address to bind. Default `127.0.0.1`. */
  hostname?: string;
  /** Port to bind; 0 picks a free one. Default 0. */
  port?: number;
  /** Certificate, key and (for mTLS) CA. Required for h2-tls and h3. */
  tls?: TlsMaterial;
  /**
   * h2c only: which server implementation. `deno` is `Deno.serve`; `native`
   * is nghttp2 through FFI (transports/h2/native_server.ts). Default `deno`.
   */
  stack?: "native" | "deno";
  /**
   * Largest request body; a larger one gets the handler's 413 (`bodyTooLarge`)
   * as soon as the transport sees it. Give the handler the same number.
   * Default the handler's `DEFAULT_MAX_BODY_BYTES`.
   */
  maxBodyBytes?: number;
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
   * HTTP/2 only (h2c, h2-tls): which client implementation to use. `native`
   * is nghttp2 through FFI (transports/h2/native_client.ts), `fetch` is
   * Deno's `fetch`. Default: the `SBILAB_H2_CLIENT` environment variable if
   * set, else `native` when its library loads, else `fetch`.
   */
  h2Client?: "native" | "fetch";
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
