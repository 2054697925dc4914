/**
 * The fallback HTTP/2 client, on `fetch` with `Deno.createHttpClient({ http1: false })`:
 * h2c with prior knowledge for `http://`, ALPN h2 for `https://`. The client
 * never falls back to HTTP/1.1. TCP_NODELAY is set on its connection after
 * the first request and after every reconnect.
 */
import { type ClientLimits, resolveClientLimits } from "../client_limits.ts";
import { parseOrigin } from "../origin.ts";
import { resolveTls } from "../tls.ts";
import {
  type ClientOptions,
  type ClientRequest,
  type ClientResponse,
  type ConnectionInfo,
  type SbiClient,
  TransportError,
  type TransportName,
} from "../types.ts";
import { toClientResponse } from "./convert.ts";
import { applyNoDelay } from "../native/nodelay.ts";
import { requestHeadersFor, requestTimeoutMs, timedRequest } from "../client_core.ts";

class H2Client implements SbiClient {
  readonly transport: TransportName;
  #origin: URL;
  #base: string;
  #client: Deno.HttpClient;
  #options: ClientOptions;
  #limits: ClientLimits;
  #port: number;
  #noDelaySet = false;
  #closed = false;

  constructor(origin: URL, client: Deno.HttpClient, options: ClientOptions) {
    this.transport = origin.protocol === "https:" ? "h2-tls" : "h2c";
    this.#origin = origin;
    this.#base = origin.origin;
    this.#client = client;
    this.#options = options;
    this.#limits = resolveClientLimits(options);
    this.#port = Number(origin.port || (origin.protocol === "https:" ? 443 : 80));
  }

  /** Deno's fetch does not expose the negotiated suite or group, nor the socket. */
  connectionInfo(): ConnectionInfo {
    return {
      stack: "deno",
      implementation: `Deno fetch (Deno ${Deno.version.deno})`,
      tls: this.transport === "h2-tls" ? { library: "rustls (Deno)" } : undefined,
    };
  }

  async request(req: ClientRequest): Promise<ClientResponse> {
    if (this.#closed) throw new TransportError("Client is closed");
    if (!req.path.startsWith("/")) {
      throw new TypeError(`Request path must start with /: ${req.path}`);
    }
    const timeoutMs = requestTimeoutMs(req, this.#options);
    const headers = requestHeadersFor(req, timeoutMs, this.#options.nfType);
    const controller = new AbortController();
    // The timeout waits among the process's shared request timers, as the native clients'
    // do (no system timer set and cleared per request); on expiry it aborts the fetch, which
    // resets the stream, and the promise rejects with TimeoutError.
    const { promise, pending } = timedRequest(timeoutMs, () => controller.abort());
    this.#send(req, headers, controller.signal).then(
      pending.resolve.bind(pending),
      (err) =>
        pending.reject(
          new TransportError(
            `${this.transport} request to ${this.#origin.host} failed: ${
              err instanceof Error ? err.message : String(err)
            }`,
            { cause: err },
          ),
        ),
    );
    return await promise;
  }

  async #send(
    req: ClientRequest,
    headers: Record<string, string>,
    signal: AbortSignal,
  ): Promise<ClientResponse> {
    try {
      const res = await fetch(this.#base + req.path, {
        method: req.method ?? "GET",
        headers,
        body: req.body && req.body.length > 0 ? req.body as Uint8Array<ArrayBuffer> : undefined,
        client: this.#client,
        signal,
      });
      const out = await toClientResponse(res, this.#limits.maxBodyBytes);
      if (!this.#noDelaySet) {
        this.#noDelaySet = true;
        applyNoDelay({ remotePort: this.#port });
      }
      return out;
    } catch (err) {
      // a new connection follows a failed one: it needs TCP_NODELAY again
      this.#noDelaySet = false;
      throw err;
    }
  }

  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#client.close();
    }
    return Promise.resolve();
  }
}

/** Creates a `fetch` HTTP/2 client for `http://host:port` (h2c) or `https://host:port` (h2). */
export async function createDenoH2Client(
  origin: string,
  options: ClientOptions = {},
): Promise<SbiClient> {
  const url = parseOrigin(origin);
  const init: Deno.CreateHttpClientOptions & Partial<Deno.TlsCertifiedKeyPem> = {
    http1: false,
    http2: true,
  };
  if (url.protocol === "https:") {
    if (options.tls) {
      const tls = await resolveTls(options.tls);
      if (tls.insecure && Deno.env.get("SBILAB_TLS_INSECURE") !== "1") {
        throw new TypeError(
          "The h2 client skips verification only under deno run --unsafely-ignore-certificate-errors (lab request -k does this); pass the server's CA instead",
        );
      }
      if (tls.caPem.length) init.caCerts = tls.caPem;
      if (tls.certPem && tls.keyPem) {
        init.cert = tls.certPem;
        init.key = tls.keyPem;
      }
      if (tls.serverName && tls.serverName !== url.hostname) {
        throw new TypeError(
          "The h2 client verifies the URL's host name; serverName is not supported",
        );
      }
    }
  }
  return new H2Client(url, Deno.createHttpClient(init), options);
}
