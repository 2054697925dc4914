/**
 * HTTP/2 servers on `Deno.serve`: h2c with prior knowledge, and h2 over TLS
 * (ALPN). TCP_NODELAY is set on the listening socket so every accepted
 * connection inherits it. Mutual TLS is terminated by a small front (see
 * mtls_front.ts) because `Deno.serve` cannot request client certificates.
 */
import type { SbiHandler } from "../../handler/types.ts";
import { resolveTls } from "../tls.ts";
import type { SbiServer, ServerOptions, TransportName } from "../types.ts";
import { BodyBudgetError, BodyTooLargeError, fromSbiResponse, toSbiRequest } from "./convert.ts";
import { applyNoDelay } from "./nodelay.ts";
import { DEFAULT_MAX_BODY_BYTES } from "../../handler/handler.ts";
import {
  bodyTooLarge,
  overloaded,
  systemFailure,
  unreadableRequest,
} from "../../handler/problem.ts";
import { type ByteBudget, defaultBodyBudget } from "../byte_budget.ts";
import { startMtlsFront } from "./mtls_front.ts";

/** Extra options of the HTTP/2 servers. */
export interface H2ServerOptions extends ServerOptions {
  /** Request-body bytes held at once by this process; past it 503. Default {@linkcode defaultBodyBudget}. */
  bodyBudget?: ByteBudget;
  /** Called with errors the transport swallowed. Default no-op. */
  onError?: (err: unknown) => void;
}

function urlHost(hostname: string): string {
  return hostname.includes(":") ? `[${hostname}]` : hostname;
}

function makeFetchHandler(handler: SbiHandler, options: H2ServerOptions) {
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const budget = options.bodyBudget ?? defaultBodyBudget;
  return async (request: Request): Promise<Response> => {
    // A declared length over the limit is refused before a byte is read.
    if (Number(request.headers.get("content-length")) > limit) {
      return fromSbiResponse(bodyTooLarge(limit));
    }
    let sbi;
    try {
      sbi = await toSbiRequest(request, limit, budget);
    } catch (err) {
      if (err instanceof BodyTooLargeError) return fromSbiResponse(bodyTooLarge(limit));
      if (err instanceof BodyBudgetError) return fromSbiResponse(overloaded(err.message));
      options.onError?.(err);
      return fromSbiResponse(unreadableRequest());
    }
    try {
      return fromSbiResponse(await handler(sbi));
    } catch (err) {
      options.onError?.(err);
      return fromSbiResponse(systemFailure());
    } finally {
      budget.release(sbi.body.length);
    }
  };
}

async function serveOn(
  transport: TransportName,
  handler: SbiHandler,
  options: H2ServerOptions,
  tls?: { cert: string; key: string },
  hostname = options.hostname ?? "127.0.0.1",
  port = options.port ?? 0,
): Promise<{ server: Deno.HttpServer<Deno.NetAddr>; port: number }> {
  const listening = Promise.withResolvers<Deno.NetAddr>();
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname,
      port,
      ...(tls ?? {}),
      onListen: (addr) => listening.resolve(addr),
      onError: (err) => {
        options.onError?.(err);
        return fromSbiResponse(systemFailure());
      },
    }, makeFetchHandler(handler, options));
  } catch (err) {
    if (err instanceof Deno.errors.AddrInUse) {
      throw new Deno.errors.AddrInUse(
        `Port ${port} on ${hostname} is already in use (${transport})`,
      );
    }
    throw err;
  }
  const addr = await listening.promise;
  applyNoDelay({ listenPort: addr.port });
  return { server, port: addr.port };
}

/** Starts an h2c (prior knowledge) server. */
export async function createH2cServer(
  handler: SbiHandler,
  options: H2ServerOptions = {},
): Promise<SbiServer> {
  const hostname = options.hostname ?? "127.0.0.1";
  const { server, port } = await serveOn("h2c", handler, options);
  let closed: Promise<void> | undefined;
  return {
    transport: "h2c",
    hostname,
    port,
    url: `http://${urlHost(hostname)}:${port}`,
    close: () => closed ??= server.shutdown(),
  };
}

/** Starts an h2 server over TLS (ALPN h2), with optional mutual TLS. */
export async function createH2TlsServer(
  handler: SbiHandler,
  options: H2ServerOptions = {},
): Promise<SbiServer> {
  if (!options.tls) throw new TypeError("h2-tls needs a certificate and key (tls option)");
  const tls = await resolveTls(options.tls);
  if (!tls.certPem || !tls.keyPem) throw new TypeError("h2-tls needs both a certificate and a key");
  const hostname = options.hostname ?? "127.0.0.1";
  if (tls.requireClientCert) {
    if (tls.caPem.length === 0) throw new TypeError("Mutual TLS needs a CA to verify clients with");
    const inner = await serveOn("h2-tls", handler, options, undefined, "127.0.0.1", 0);
    const front = await startMtlsFront({
      hostname,
      port: options.port ?? 0,
      certPem: tls.certPem,
      keyPem: tls.keyPem,
      caPem: tls.caPem,
      innerPort: inner.port,
      onError: options.onError,
    });
    let closed: Promise<void> | undefined;
    return {
      transport: "h2-tls",
      hostname,
      port: front.port,
      url: `https://${urlHost(hostname)}:${front.port}`,
      close: () => closed ??= Promise.all([front.close(), inner.server.shutdown()]).then(() => {}),
    };
  }
  const { server, port } = await serveOn("h2-tls", handler, options, {
    cert: tls.certPem,
    key: tls.keyPem,
  });
  let closed: Promise<void> | undefined;
  return {
    transport: "h2-tls",
    hostname,
    port,
    url: `https://${urlHost(hostname)}:${port}`,
    close: () => closed ??= server.shutdown(),
  };
}
