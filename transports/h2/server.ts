/**
 * HTTP/2 servers on `Deno.serve`: h2c with prior knowledge, and h2 over TLS
 * (ALPN). TCP_NODELAY is set on the listening socket so every accepted
 * connection inherits it. Mutual TLS is terminated by a small front (see
 * mtls_front.ts) because `Deno.serve` cannot request client certificates.
 */
import type { SbiHandler } from "../../handler/types.ts";
import { resolveTls } from "../tls.ts";
import type { SbiServer, ServerOptions, TransportName } from "../types.ts";
import { BodyTooLargeError, fromSbiResponse, toSbiRequest } from "./convert.ts";
import { applyNoDelay } from "./nodelay.ts";
import { transportProblem } from "../problem_response.ts";
import { payloadTooLarge } from "../../handler/problem.ts";
import { startMtlsFront } from "./mtls_front.ts";

/** Largest request body the transport reads before answering 413. */
export const TRANSPORT_MAX_BODY = 32 * 1024 * 1024;

/** Extra options of the HTTP/2 servers. */
export interface H2ServerOptions extends ServerOptions {
  /** Largest request body read before answering 413. Default 32 MiB. */
  maxBodyBytes?: number;
  /** Called with errors the transport swallowed. Default no-op. */
  onError?: (err: unknown) => void;
}

function urlHost(hostname: string): string {
  return hostname.includes(":") ? `[${hostname}]` : hostname;
}

function makeFetchHandler(handler: SbiHandler, options: H2ServerOptions) {
  const limit = options.maxBodyBytes ?? TRANSPORT_MAX_BODY;
  return async (request: Request): Promise<Response> => {
    let sbi;
    try {
      sbi = await toSbiRequest(request, limit);
    } catch (err) {
      if (err instanceof BodyTooLargeError) {
        // the handler's own 413, so every stack answers an oversized body with the same bytes
        return fromSbiResponse(payloadTooLarge(limit).toResponse());
      }
      options.onError?.(err);
      return fromSbiResponse(transportProblem(400, "Unreadable request", "INVALID_MSG_FORMAT"));
    }
    try {
      return fromSbiResponse(await handler(sbi));
    } catch (err) {
      options.onError?.(err);
      return fromSbiResponse(transportProblem(500, "Internal error", "SYSTEM_FAILURE"));
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
        return fromSbiResponse(transportProblem(500, "Internal error", "SYSTEM_FAILURE"));
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
