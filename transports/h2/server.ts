/**
 * The native HTTP/2 server, h2c and h2 over TLS: nghttp2 (through the sbh2 shim, native/sbh2_server.c)
 * owns the HTTP/2 state, TypeScript owns the listening socket and each
 * connection's readiness, and the shared handler answers. Built like the h3
 * server: bytes cross in batches, requests arrive as events and leave as
 * responses through the one wire format (../wire.ts).
 *
 * Per connection, each wake-up is one `read()` into the connection's buffer,
 * one `recv()` that feeds all of it, one `poll()` that hands over every
 * complete request, one handler call per request, and one native call for
 * every response that is ready in the same turn of the event loop: the shim
 * builds the output and sends it on the socket's fd itself, never waiting,
 * and only what the kernel does not take at once goes through Deno's
 * `write()` (and so, where the fd cannot be found, all of it does). Response
 * bodies of 4 KiB or more are lent to the shim, not copied: the connection
 * keeps them alive until the shim releases them.
 *
 * Over TLS the same shape holds with GnuTLS inside the module
 * (native/sbh2_tls.c, the library and settings h3 uses): read → recv that
 * decrypts straight into the session … send that encrypts the session's
 * output and sends it; no plaintext crosses into JavaScript. After the handshake
 * the `onTls` hook sees each connection (peer address, what it negotiated,
 * its keying-material exporter); under mutual TLS every request carries the
 * verified client certificate's subject as `peer`. TLS 1.3 session tickets
 * are sealed with keys GnuTLS derives from a random master key per server
 * and rotates every ticket lifetime.
 *
 * Limits: the shared ones of {@linkcode ServerOptions} (body limit,
 * handshake, idle and stall timeouts, queued response bytes) run in the shim
 * (see {@linkcode H2ServerLimitOptions}), the handshake timeout counting from
 * accept through the TLS handshake to the peer's preface and SETTINGS. The
 * request-body budget is held twice: the shim counts the bodies its
 * connections buffer as they arrive (a declared length whole) against the
 * budget's limit, and a complete body is taken from the shared budget while
 * the handler holds it; a body that does not fit is answered 503. The server
 * adds the connection cap, a stall timeout on TCP writes and an accept loop
 * that backs off on errors such as EMFILE and keeps serving.
 *
 * That is the `runtime` I/O, the default. With `io: "module"` the module owns
 * the listening socket and runs it, TLS handshakes included, on its own
 * thread, with the same limits: see `module_server.ts`.
 */
import { urlHost } from "../origin.ts";
import type { SbiHandler } from "../../handler/types.ts";
import { resolveTls } from "../tls.ts";
import type { ServerOptions } from "../types.ts";
import { AcceptBackoff, ServerCore } from "../server_core.ts";
import type { ServerLimits } from "../server_limits.ts";
import { ResponseBlockWriter } from "../native/wire.ts";
import { NATIVE_ERR } from "../native/errors.ts";
import { EventPoller } from "../native/event_poller.ts";
import { loadH2Library } from "./loader.ts";
import { applyNoDelay } from "../native/nodelay.ts";
import { H2_STAT, H2ServerConn, type H2ServerLimitOptions, H2ServerLimits } from "./server_ffi.ts";
import type { Sbh2Symbols } from "./symbols.ts";
import { H2Tls, H2TlsConfig } from "./tls_ffi.ts";
import { handshakeGate } from "../work_gate.ts";
import { BufferPool, Connection, type ConnectionHost } from "./server_connection.ts";
import { type IoLoopStats, type NativeIo, nativeIo } from "../native/io_loop.ts";
import { H2Listener } from "./server_ffi.ts";
import { ModuleH2Server, type NativeH2Server } from "./module_server.ts";

/**
 * Options of the native h2 servers: the shared {@linkcode ServerOptions} and
 * the shim's own limits (its settings timeout is `handshakeTimeoutMs`, its
 * server-wide cap on queued response bytes defaults to the response budget's
 * limit).
 */
export type NativeH2ServerOptions =
  & ServerOptions
  & Omit<H2ServerLimitOptions, "settingsTimeoutMs">;

/** TLS handshakes one listener works on at once; further ones wait with their first bytes read. */
const MAX_HANDSHAKES = 32;

/** Idle connections closed at once when accepting fails for want of descriptors. */
const ROOM_AT_FD_LIMIT = 16;

export type { NativeH2Server };

/** The server behind both factories: h2c, or h2 over TLS when it has a TLS configuration. */
class NativeH2cServer implements NativeH2Server, ConnectionHost {
  readonly transport: "h2c" | "h2-tls";
  readonly hostname: string;
  readonly port: number;
  readonly url: string;
  /** The request path, limits, hooks and drain. */
  readonly core: ServerCore;
  readonly poller = new EventPoller();
  readonly writer = new ResponseBlockWriter();
  readonly pool = new BufferPool();
  /** Writes through Deno's write (for tests and diagnostics). */
  fallbackWrites = 0;
  /** Idle connections closed to let new ones in (at the cap or the fd limit). */
  roomMade = 0;
  /** The fds of open connections, skipped when looking for a new one's. */
  readonly fds = new Set<number>();
  #sym: Sbh2Symbols;
  #limits: H2ServerLimits;
  #listener: Deno.TcpListener;
  #conns = new Set<Connection>();
  #accepting: Promise<void>;
  #sweep: ReturnType<typeof setTimeout> | undefined;
  #sweepMs: number;
  #stallMs: number;
  #stopping = false;
  #closing: Promise<void> | undefined;
  #backoff = new AcceptBackoff(5, 1000);
  /** TLS handshakes at work, and the connections waiting for a place among them. */
  #handshakes = 0;
  #slotWaiters: (() => void)[] = [];
  #tlsConfig: H2TlsConfig | undefined;

  constructor(
    sym: Sbh2Symbols,
    limits: H2ServerLimits,
    listener: Deno.TcpListener,
    hostname: string,
    core: ServerCore,
    tlsConfig?: H2TlsConfig,
  ) {
    this.transport = tlsConfig ? "h2-tls" : "h2c";
    this.#tlsConfig = tlsConfig;
    this.#sym = sym;
    this.#limits = limits;
    this.#listener = listener;
    this.core = core;
    this.hostname = hostname;
    this.port = (listener.addr as Deno.NetAddr).port;
    this.url = `${tlsConfig ? "https" : "http"}://${urlHost(hostname)}:${this.port}`;
    const l = core.limits;
    this.#stallMs = l.stallTimeoutMs;
    // the shim's timers are checked this often: a quarter of the shortest, within 20 ms .. 1 s
    const shortest = Math.min(l.idleTimeoutMs, l.handshakeTimeoutMs, l.stallTimeoutMs);
    this.#sweepMs = Math.min(1000, Math.max(20, Math.floor(shortest / 4)));
    this.#accepting = this.#acceptLoop();
  }

  get limits(): ServerLimits {
    return this.core.limits;
  }

  get io(): NativeIo {
    return "runtime";
  }

  ioStats(): IoLoopStats | null {
    return null;
  }

  async #acceptLoop(): Promise<void> {
    const backoff = this.#backoff;
    // Bounded by close(): closing the listener ends the pending accept.
    while (!this.#stopping) {
      let sock: Deno.TcpConn;
      try {
        sock = await this.#listener.accept();
        backoff.succeeded();
      } catch (err) {
        if (this.#stopping || err instanceof Deno.errors.BadResource) break;
        // EMFILE, ENFILE, ENOMEM, ECONNABORTED: report, make room, wait a little, keep serving
        const wait = backoff.failed();
        this.core.onError(AcceptBackoff.error(err, wait));
        this.#makeRoom(ROOM_AT_FD_LIMIT);
        await new Promise((r) => setTimeout(r, wait));
        continue;
      }
      if (
        this.#stopping ||
        (this.#conns.size >= this.core.limits.maxConnections && this.#makeRoom(1) === 0)
      ) {
        try {
          sock.close();
        } catch {
          // already closed
        }
        continue;
      }
      try {
        sock.setNoDelay(true);
      } catch {
        // the peer is already gone; the first read says so
      }
      // Over TLS, setting a connection up shares the handshakes' slice of each turn: a flood
      // of new connections is taken in at the pace serving leaves room for.
      const gate = this.#tlsConfig ? handshakeGate : undefined;
      if (gate) await gate.enter();
      const t0 = gate ? performance.now() : 0;
      try {
        this.#setUp(sock);
      } finally {
        gate?.spent(performance.now() - t0);
      }
    }
  }

  /** Makes a new connection's session (and TLS session) and starts serving it. */
  #setUp(sock: Deno.TcpConn): void {
    let h2: H2ServerConn | undefined;
    let tls: H2Tls | undefined;
    try {
      h2 = new H2ServerConn(this.#sym, this.#limits);
      if (this.#tlsConfig) tls = new H2Tls(this.#sym, this.#tlsConfig);
    } catch (err) {
      this.core.onError(err);
      h2?.close();
      sock.close();
      return;
    }
    this.#conns.add(new Connection(this, sock, h2, tls));
    this.#armSweep();
  }

  /**
   * Resolves when one more TLS handshake may go to work: at most
   * MAX_HANDSHAKES at once, so that however many ClientHellos arrive, their
   * reads, writes and crypto never crowd out serving. A connection asks once
   * its peer's first bytes arrived (an idle one holds no place); each
   * resolved call is paired with {@linkcode handshakeEnded}.
   */
  handshakeSlot(): Promise<void> {
    if (this.#handshakes < MAX_HANDSHAKES || this.#stopping) {
      this.#handshakes++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#slotWaiters.push(resolve));
  }

  /** A TLS handshake at work ended (done or failed): its place goes to the next waiting. */
  handshakeEnded(): void {
    const next = this.#slotWaiters.shift();
    if (next) next();
    else this.#handshakes--;
  }

  /**
   * Closes up to `n` of the connections with no request in flight, those
   * quiet longest first, with GOAWAY: at the connection cap or the fd limit
   * a new client takes the place of an idle one. Returns how many it closed.
   */
  #makeRoom(n: number): number {
    // Quiet longest first by a scan in JavaScript; only the candidate's streams are asked
    // of the module (a busy one is passed over), so a flood at the cap costs little.
    let closed = 0;
    const busy = new Set<Connection>();
    for (let tries = 0; closed < n && tries < n + 16; tries++) {
      let idlest: Connection | undefined;
      for (const c of this.#conns) {
        if (c.finished || busy.has(c)) continue;
        if (!idlest || c.lastActive < idlest.lastActive) idlest = c;
      }
      if (!idlest) break;
      if (!idlest.quiet) {
        busy.add(idlest);
        continue;
      }
      idlest.shutdown(); // GOAWAY (NO_ERROR): nothing was in flight
      idlest.finish();
      closed++;
    }
    this.roomMade += closed;
    return closed;
  }

  forget(conn: Connection): void {
    this.#conns.delete(conn);
    this.core.connectionClosed();
    if (this.#conns.size === 0) this.core.wake();
  }

  #armSweep(): void {
    if (this.#sweep !== undefined || this.#conns.size === 0) return;
    this.#sweep = setTimeout(() => {
      this.#sweep = undefined;
      this.#runSweep();
      this.#armSweep();
    }, this.#sweepMs);
  }

  /** Runs every connection's timers; closes connections whose writes stalled. */
  #runSweep(): void {
    for (const c of [...this.#conns]) {
      if (c.writing && ++c.writeSweeps * this.#sweepMs > this.#stallMs) {
        c.finish(); // the peer stopped reading from TCP
        continue;
      }
      if (c.session.tick() === NATIVE_ERR.CLOSED) {
        c.finish();
        continue;
      }
      c.flush();
    }
  }

  /** Connections open now (for tests and diagnostics). */
  get connectionCount(): number {
    return this.#conns.size;
  }

  /** Accept errors survived so far (for tests and diagnostics). */
  get acceptErrors(): number {
    return this.#backoff.errors;
  }

  /** Sums one shim counter ({@linkcode H2_STAT}) over open connections (for tests and diagnostics). */
  stat(which: number): number {
    let n = 0;
    for (const c of this.#conns) n += c.session.stat(which);
    return n;
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#stopping = true;
    for (const w of this.#slotWaiters.splice(0)) {
      this.#handshakes++;
      w();
    }
    try {
      this.#listener.close();
    } catch {
      // already closed
    }
    await this.#accepting;
    for (const c of this.#conns) c.shutdown();
    await this.core.drain(() => this.#conns.size > 0, () => {
      for (const c of this.#conns) if (c.session.stat(H2_STAT.STREAMS) === 0) c.flush();
    });
    const left = [...this.#conns];
    for (const c of left) c.finish();
    await Promise.all(left.map((c) => c.reading));
    clearTimeout(this.#sweep);
    this.#sweep = undefined;
    this.#limits.close();
    this.#tlsConfig?.close();
  }
}

async function start(
  handler: SbiHandler,
  options: NativeH2ServerOptions,
  tls?: (sym: Sbh2Symbols, limits: ServerLimits) => H2TlsConfig,
): Promise<NativeH2Server> {
  const io = nativeIo(options.io);
  const core = new ServerCore(handler, options);
  const l = core.limits;
  const lib = await loadH2Library();
  const tlsConfig = tls?.(lib.symbols, l);
  let limits: H2ServerLimits;
  try {
    limits = new H2ServerLimits(lib.symbols, {
      ...options,
      maxBodyBytes: l.maxBodyBytes,
      maxHeaderListBytes: options.maxHeaderListBytes ?? l.maxHeaderSectionBytes,
      idleTimeoutMs: l.idleTimeoutMs,
      settingsTimeoutMs: l.handshakeTimeoutMs,
      stallTimeoutMs: l.stallTimeoutMs,
      maxServerQueuedBytes: options.maxServerQueuedBytes ?? l.maxQueuedResponseBytes,
      maxBufferedBodyBytes: options.maxBufferedBodyBytes ?? l.maxInflightBodyBytes,
    });
  } catch (err) {
    tlsConfig?.close();
    throw err;
  }
  const hostname = options.hostname ?? "127.0.0.1";
  const port = options.port ?? 0;
  if (io === "module") return startModule(lib.symbols, limits, hostname, port, core, tlsConfig);
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname, port, transport: "tcp" });
  } catch (err) {
    limits.close();
    tlsConfig?.close();
    if (err instanceof Deno.errors.AddrInUse) {
      throw new Deno.errors.AddrInUse(
        `Port ${port} on ${hostname} is already in use (${tls ? "h2-tls" : "h2c"})`,
      );
    }
    throw err;
  }
  // Accepted sockets inherit TCP_NODELAY from the listener (each is also set on accept).
  applyNoDelay({ listenPort: (listener.addr as Deno.NetAddr).port });
  return new NativeH2cServer(lib.symbols, limits, listener, hostname, core, tlsConfig);
}

/** The h2 server on the module's own I/O thread; takes `limits` and `tlsConfig` over (freed on failure). */
function startModule(
  sym: Sbh2Symbols,
  limits: H2ServerLimits,
  hostname: string,
  port: number,
  core: ServerCore,
  tlsConfig: H2TlsConfig | undefined,
): NativeH2Server {
  let listener: H2Listener | undefined;
  try {
    try {
      listener = new H2Listener(sym, hostname, port);
    } catch (err) {
      // the module says only that it failed: Deno's own listen names why (AddrInUse and the like)
      let probe: Deno.TcpListener | undefined;
      try {
        probe = Deno.listen({ hostname, port, transport: "tcp" });
      } catch (why) {
        if (why instanceof Deno.errors.AddrInUse) {
          throw new Deno.errors.AddrInUse(
            `Port ${port} on ${hostname} is already in use (${tlsConfig ? "h2-tls" : "h2c"})`,
          );
        }
        throw why;
      } finally {
        probe?.close();
      }
      throw err;
    }
    listener.configure(core.limits.maxConnections, core.limits.stallTimeoutMs);
    if (tlsConfig) listener.setTls(tlsConfig);
    return new ModuleH2Server(sym, limits, listener, hostname, core, tlsConfig);
  } catch (err) {
    listener?.close();
    limits.close();
    tlsConfig?.close();
    throw err;
  }
}

/**
 * Starts the native h2c server (prior knowledge) around `handler`; throws
 * `H2LoadError` when the native library is missing and `AddrInUse` when the
 * port is taken.
 */
export function createNativeH2cServer(
  handler: SbiHandler,
  options: NativeH2ServerOptions = {},
): Promise<NativeH2Server> {
  return start(handler, options);
}

/**
 * Starts the native HTTP/2 server over TLS (ALPN h2 only, TLS 1.3 on GnuTLS,
 * mutual TLS when `tls.requireClientCert`) around `handler`. Throws
 * `TypeError` without a certificate and key (or without a CA under mTLS),
 * `H2LoadError` when the native library is missing and `AddrInUse` when the
 * port is taken.
 */
export async function createNativeH2TlsServer(
  handler: SbiHandler,
  options: NativeH2ServerOptions = {},
): Promise<NativeH2Server> {
  if (!options.tls) throw new TypeError("h2-tls needs a certificate and key (tls option)");
  const material = await resolveTls(options.tls);
  if (!material.certPem || !material.keyPem) {
    throw new TypeError("h2-tls needs both a certificate and a key");
  }
  return await start(
    handler,
    options,
    (sym, limits) =>
      H2TlsConfig.create(sym, material, "server", {
        ticketLifetimeSeconds: limits.ticketLifetimeSeconds,
      }),
  );
}
