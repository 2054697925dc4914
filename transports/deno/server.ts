/**
 * HTTP/2 servers on `Deno.serve`: h2c with prior knowledge, and h2 over TLS
 * (ALPN). TCP_NODELAY is set on the listening socket so every accepted
 * connection inherits it. Mutual TLS is terminated by a small front (see
 * mtls_front.ts) because `Deno.serve` cannot request client certificates.
 *
 * Limits: the body limit and an in-flight body budget as bodies stream in;
 * large responses streamed under a process-wide budget, their connection
 * closed when the peer stops reading; a connection cap, handshake and idle timeouts enforced
 * by a {@linkcode ConnectionGuard}; and when accepting fails (EMFILE, ENFILE,
 * ENOMEM) `Deno.serve` ends its accept loop, so the listener is opened again
 * after a back-off while the connections it had keep being served.
 */
import { urlHost } from "../origin.ts";
import type { SbiHandler } from "../../handler/types.ts";
import { resolveTls } from "../tls.ts";
import type { SbiServer, ServerOptions, TransportName } from "../types.ts";
import { BodyBudgetError, BodyTooLargeError, fromSbiResponse, toSbiRequest } from "./convert.ts";
import { applyNoDelay } from "../native/nodelay.ts";
import { freeFds } from "../fd_limit.ts";
import {
  bodyTooLarge,
  overloaded,
  systemFailure,
  unreadableRequest,
} from "../../handler/problem.ts";
import { AcceptBackoff, ServerCore } from "../server_core.ts";
import type { ServerLimits } from "../server_limits.ts";
import { ConnectionGuard, connectionLimits } from "./conn_guard.ts";
import { ResponseBodies, STREAM_THRESHOLD } from "./response_body.ts";
import { startMtlsFront } from "./mtls_front.ts";

/**
 * Options of the `Deno.serve` HTTP/2 servers: the shared {@linkcode ServerOptions}
 * (body limit and budget, response budget, connection cap, handshake, idle
 * and stall timeouts).
 */
export type H2ServerOptions = ServerOptions;

/** Pauses between attempts to listen again after accepting failed, ms. */
const FIRST_BACKOFF_MS = 50;
const MAX_BACKOFF_MS = 2000;
/** Descriptors that must be free before the listener is opened again. */
const MIN_FREE_FDS = 16;

/** A `Deno.serve` server with the limits it applies. */
export interface DenoSbiServer extends SbiServer {
  /** The limits in force. */
  readonly limits: ServerLimits;
}

/** Per-listener state the request path reports to. */
interface Watch {
  guard?: ConnectionGuard;
  bodies: ResponseBodies;
}

/** Why an answer the response budget had no room for was refused. */
const NO_ROOM = "No room for the response in the server's response budget";

function makeFetchHandler(core: ServerCore, watch: Watch) {
  const limit = core.limits.maxBodyBytes;
  const budget = core.bodyBudget;
  /**
   * The response, and whether its body streams (then `onEnd` runs when it is
   * done, and `onStall` if the peer stops reading it).
   */
  async function answer(
    request: Request,
    onEnd: () => void,
    onStall: () => void,
  ): Promise<[Response, boolean]> {
    // A declared length over the limit is refused before a byte is read.
    if (Number(request.headers.get("content-length")) > limit) {
      return [fromSbiResponse(bodyTooLarge(limit)), false];
    }
    let sbi;
    try {
      sbi = await toSbiRequest(request, limit, budget);
    } catch (err) {
      if (err instanceof BodyTooLargeError) return [fromSbiResponse(bodyTooLarge(limit)), false];
      if (err instanceof BodyBudgetError) return [fromSbiResponse(overloaded(err.message)), false];
      core.onError(err);
      return [fromSbiResponse(unreadableRequest()), false];
    }
    try {
      const { response: res, reserved } = await core.answer(sbi);
      // No room for the answer: Deno.serve cannot reset one stream, so the refusal is a 503.
      if (res.refused) return [fromSbiResponse(overloaded(NO_ROOM)), false];
      if (res.body.length <= STREAM_THRESHOLD) {
        core.releaseResponse(undefined, reserved); // the runtime copies it whole
        return [fromSbiResponse(res), false];
      }
      const body = watch.bodies.stream(res.body, onEnd, onStall, reserved);
      const headers = { ...res.headers, "content-length": String(res.body.length) };
      return [new Response(body, { status: res.status, headers }), true];
    } catch (err) {
      core.onError(err);
      return [fromSbiResponse(systemFailure()), false];
    } finally {
      budget.release(sbi.body.length);
    }
  }
  return async (request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) => {
    const guard = watch.guard;
    const peer = info.remoteAddr.port;
    guard?.requestStarted(peer);
    let streamed = false;
    try {
      const [res, isStream] = await answer(
        request,
        () => guard?.requestEnded(peer),
        () => guard?.closePeer(peer),
      );
      streamed = isStream;
      return res;
    } finally {
      if (!streamed) guard?.requestEnded(peer);
    }
  };
}

/** A `Deno.serve` listener that opens itself again when its accept loop fails. */
class Listener {
  port = 0;
  #core: ServerCore;
  #make: () => Deno.HttpServer<Deno.NetAddr>;
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  #closing = false;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #backoff = new AcceptBackoff(FIRST_BACKOFF_MS, MAX_BACKOFF_MS);
  /** How many times the listener was opened again after an accept failure. */
  restarts = 0;

  constructor(core: ServerCore, make: () => Deno.HttpServer<Deno.NetAddr>) {
    this.#core = core;
    this.#make = make;
  }

  /** Opens the listener; resolves with its address. */
  async start(listening: Promise<Deno.NetAddr>): Promise<Deno.NetAddr> {
    this.#watch(this.#make());
    const addr = await listening;
    this.port = addr.port;
    return addr;
  }

  #watch(server: Deno.HttpServer<Deno.NetAddr>): void {
    this.#server = server;
    // The accept loop ends with a rejection on EMFILE, ENFILE or ENOMEM: left alone it is an
    // uncaught rejection that ends the process (and every other transport with it).
    server.finished.catch((err) => {
      if (this.#closing) return;
      const wait = this.#backoff.failed();
      this.#core.onError(AcceptBackoff.error(err, wait));
      this.#schedule(wait);
    });
  }

  #schedule(wait: number): void {
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      if (this.#closing) return;
      // A listener opened while every descriptor is taken fails its first accept at once and,
      // closing, resets whoever was in its queue: wait until the connections shut down by the
      // guard have given theirs back.
      const free = freeFds();
      if (free !== undefined && free < MIN_FREE_FDS) {
        this.#schedule(FIRST_BACKOFF_MS);
        return;
      }
      try {
        this.#watch(this.#make());
        this.restarts++;
        this.#backoff.succeeded();
      } catch (err) {
        this.#core.onError(err);
        this.#schedule(this.#backoff.failed());
      }
    }, wait);
  }

  async shutdown(): Promise<void> {
    this.#closing = true;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    await this.#server?.shutdown().catch(() => {});
  }
}

async function serveOn(
  transport: TransportName,
  core: ServerCore,
  options: H2ServerOptions,
  tls?: { cert: string; key: string },
  hostname = options.hostname ?? "127.0.0.1",
  port = options.port ?? 0,
): Promise<{ port: number; close(): Promise<void>; guard: ConnectionGuard }> {
  const bodies = new ResponseBodies(core.responseBudget, core.limits.stallTimeoutMs);
  const watch: Watch = { bodies };
  const fetchHandler = makeFetchHandler(core, watch);
  const listening = Promise.withResolvers<Deno.NetAddr>();
  let boundPort = port;
  const make = () =>
    Deno.serve({
      hostname,
      port: boundPort,
      ...(tls ?? {}),
      onListen: (addr) => {
        listening.resolve(addr);
        applyNoDelay({ listenPort: addr.port });
      },
      onError: (err) => {
        core.onError(err);
        return fromSbiResponse(systemFailure());
      },
    }, fetchHandler);
  const listener = new Listener(core, make);
  try {
    boundPort = (await listener.start(listening.promise)).port;
  } catch (err) {
    if (err instanceof Deno.errors.AddrInUse) {
      throw new Deno.errors.AddrInUse(
        `Port ${port} on ${hostname} is already in use (${transport})`,
      );
    }
    throw err;
  }
  const guard = new ConnectionGuard(
    boundPort,
    connectionLimits(core.limits),
    (err) => core.onError(err),
  );
  guard.onGone = () => core.connectionClosed();
  watch.guard = guard;
  const stallEvery = Math.max(25, Math.min(1000, bodies.stallTimeoutMs / 4));
  const stallTimer = setInterval(() => bodies.sweep(), stallEvery);
  Deno.unrefTimer(stallTimer);
  return {
    port: boundPort,
    guard,
    close: async () => {
      clearInterval(stallTimer);
      guard.close();
      await listener.shutdown();
    },
  };
}

/** Starts an h2c (prior knowledge) server. */
export async function createDenoH2cServer(
  handler: SbiHandler,
  options: H2ServerOptions = {},
): Promise<DenoSbiServer> {
  const core = new ServerCore(handler, options);
  const hostname = options.hostname ?? "127.0.0.1";
  const inner = await serveOn("h2c", core, options);
  let closed: Promise<void> | undefined;
  return {
    transport: "h2c",
    limits: core.limits,
    hostname,
    port: inner.port,
    url: `http://${urlHost(hostname)}:${inner.port}`,
    close: () => closed ??= inner.close(),
  };
}

/** Starts an h2 server over TLS (ALPN h2), with optional mutual TLS. */
export async function createDenoH2TlsServer(
  handler: SbiHandler,
  options: H2ServerOptions = {},
): Promise<DenoSbiServer> {
  if (!options.tls) throw new TypeError("h2-tls needs a certificate and key (tls option)");
  const core = new ServerCore(handler, options);
  const tls = await resolveTls(options.tls);
  if (!tls.certPem || !tls.keyPem) throw new TypeError("h2-tls needs both a certificate and a key");
  const hostname = options.hostname ?? "127.0.0.1";
  if (tls.requireClientCert) {
    if (tls.caPem.length === 0) throw new TypeError("Mutual TLS needs a CA to verify clients with");
    const inner = await serveOn("h2-tls", core, options, undefined, "127.0.0.1", 0);
    const front = await startMtlsFront({
      hostname,
      port: options.port ?? 0,
      certPem: tls.certPem,
      keyPem: tls.keyPem,
      caPem: tls.caPem,
      innerPort: inner.port,
      limits: connectionLimits(core.limits),
      onError: (err) => core.onError(err),
    });
    let closed: Promise<void> | undefined;
    return {
      transport: "h2-tls",
      limits: core.limits,
      hostname,
      port: front.port,
      url: `https://${urlHost(hostname)}:${front.port}`,
      close: () => closed ??= Promise.all([front.close(), inner.close()]).then(() => {}),
    };
  }
  const inner = await serveOn("h2-tls", core, options, {
    cert: tls.certPem,
    key: tls.keyPem,
  });
  let closed: Promise<void> | undefined;
  return {
    transport: "h2-tls",
    limits: core.limits,
    hostname,
    port: inner.port,
    url: `https://${urlHost(hostname)}:${inner.port}`,
    close: () => closed ??= inner.close(),
  };
}
