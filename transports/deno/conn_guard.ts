/**
 * Connection limits for a `Deno.serve` listener, which offers no hook per
 * connection: a sweep lists the listener's accepted sockets (from
 * `/proc/self/fd`), reads each one's TCP_INFO through libc, and shuts down the
 * ones over the cap (the idlest first: no request in flight, quiet longest), the ones that have not started a request
 * within the handshake timeout (covers a missing or slow preface and a slow
 * TLS handshake), and the idle ones. `shutdown(2)` makes the runtime see the
 * connection end and close it cleanly; the listener keeps serving.
 */
import { libc } from "../../lib/libc.ts";
import { DEFAULT_SERVER_LIMITS, type ServerLimits } from "../server_limits.ts";
import { tcpSockets } from "../native/nodelay.ts";

/** Connection limits of one listener. */
export interface ConnectionLimits {
  /** Connections held at once; beyond it the idlest are closed. Default 4096. */
  maxConnections?: number;
  /** A connection must start its first request within this many ms (preface, TLS handshake). Default 10000. */
  handshakeTimeoutMs?: number;
  /** A connection with no request in flight and no bytes either way for this many ms is closed. Default 60000. */
  idleTimeoutMs?: number;
}

/** Defaults of {@linkcode ConnectionLimits}: the servers' shared defaults. */
export const DEFAULT_CONNECTION_LIMITS: Required<ConnectionLimits> = {
  maxConnections: DEFAULT_SERVER_LIMITS.maxConnections,
  handshakeTimeoutMs: DEFAULT_SERVER_LIMITS.handshakeTimeoutMs,
  idleTimeoutMs: DEFAULT_SERVER_LIMITS.idleTimeoutMs,
};

/** The connection limits among a server's resolved limits. */
export function connectionLimits(limits: ServerLimits): Required<ConnectionLimits> {
  return {
    maxConnections: limits.maxConnections,
    handshakeTimeoutMs: limits.handshakeTimeoutMs,
    idleTimeoutMs: limits.idleTimeoutMs,
  };
}

/** Why the guard closed connections, counted. */
export interface GuardCounts {
  /** Over the connection cap. */
  cap: number;
  /** No request within the handshake timeout. */
  handshake: number;
  /** Idle past the idle timeout. */
  idle: number;
  /** A response not read for the stall timeout. */
  stalled: number;
}

const IPPROTO_TCP = 6;
const TCP_INFO = 11;
const SHUT_RDWR = 2;
const TCP_ESTABLISHED = 1;
// Offsets in struct tcp_info (linux/tcp.h).
const LAST_DATA_SENT = 44;
const LAST_DATA_RECV = 52;

const info = new Uint8Array(232);
const infoView = new DataView(info.buffer);
const infoLen = new Uint32Array(1);

/** ms since data was last sent and received, and whether the socket is still established. */
function tcpInfo(
  fd: number,
): { sentAgo: number; recvAgo: number; established: boolean } | undefined {
  infoLen[0] = info.length;
  if (libc().getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, infoLen) !== 0) return undefined;
  return {
    established: info[0] === TCP_ESTABLISHED,
    sentAgo: infoView.getUint32(LAST_DATA_SENT, true),
    recvAgo: infoView.getUint32(LAST_DATA_RECV, true),
  };
}

interface Tracked {
  seenAt: number;
  closed: boolean;
}

/** Watches the connections accepted on one port and enforces {@linkcode ConnectionLimits}. */
export class ConnectionGuard {
  readonly limits: Required<ConnectionLimits>;
  readonly counts: GuardCounts = { cap: 0, handshake: 0, idle: 0, stalled: 0 };
  #port: number;
  #timer: ReturnType<typeof setInterval>;
  #conns = new Map<string, Tracked>();
  /** Requests in flight and whether one ever started, by the peer's port. */
  #requests = new Map<number, { inflight: number; started: boolean }>();
  #reserve: Deno.FsFile | undefined;
  #toClose = new Set<number>();
  #onError: (err: unknown) => void;
  /** Called by a sweep that found connections gone since the sweep before. Default none. */
  onGone: (() => void) | undefined;

  constructor(
    port: number,
    limits: ConnectionLimits = {},
    onError: (err: unknown) => void = () => {},
  ) {
    this.#port = port;
    this.limits = { ...DEFAULT_CONNECTION_LIMITS, ...limits };
    this.#onError = onError;
    const { handshakeTimeoutMs, idleTimeoutMs } = this.limits;
    const every = Math.max(25, Math.min(500, handshakeTimeoutMs / 4, idleTimeoutMs / 4));
    this.#timer = setInterval(() => this.sweep(), every);
    Deno.unrefTimer(this.#timer);
    // One descriptor held back, so the sweep can still list /proc/self/fd at the fd limit.
    try {
      this.#reserve = Deno.openSync("/dev/null");
    } catch {
      this.#reserve = undefined;
    }
  }

  /** A request from the peer at `remotePort` started. */
  requestStarted(remotePort: number): void {
    const r = this.#requests.get(remotePort);
    if (r) {
      r.inflight++;
      r.started = true;
    } else this.#requests.set(remotePort, { inflight: 1, started: true });
  }

  /** A request from the peer at `remotePort` ended (its response was sent or abandoned). */
  requestEnded(remotePort: number): void {
    const r = this.#requests.get(remotePort);
    if (r && r.inflight > 0) r.inflight--;
  }

  /**
   * Closes the connection from the peer at `remotePort` (a stalled response).
   * Requests are batched: one listing of the process's sockets serves every
   * peer asked for in the same turn, however many of its streams stalled.
   */
  closePeer(remotePort: number): void {
    this.#toClose.add(remotePort);
    if (this.#toClose.size > 1) return;
    queueMicrotask(() => {
      const peers = this.#toClose;
      this.#toClose = new Set();
      let sockets;
      try {
        sockets = this.#list();
      } catch (err) {
        this.#onError(err);
        return;
      }
      for (const s of sockets) {
        if (s.listening || s.localPort !== this.#port || !peers.has(s.remotePort!)) continue;
        libc().shutdown(s.fd, SHUT_RDWR);
        this.counts.stalled++;
      }
    });
  }

  #list() {
    try {
      return tcpSockets();
    } catch (err) {
      if (!(err instanceof Deno.errors.Busy) && !/os error 24|os error 23/.test(String(err))) {
        throw err;
      }
      // At the fd limit: give the reserve back for the listing, then take it again.
      this.#reserve?.close();
      this.#reserve = undefined;
      try {
        return tcpSockets();
      } finally {
        try {
          this.#reserve = Deno.openSync("/dev/null");
        } catch {
          // still at the limit; the next sweep tries again
        }
      }
    }
  }

  /** One pass: closes what the limits say; returns how many it closed. */
  sweep(now = Date.now()): number {
    let sockets;
    try {
      sockets = this.#list().filter((s) =>
        !s.listening && s.localPort === this.#port && s.remotePort !== undefined
      );
    } catch (err) {
      this.#onError(err);
      return 0;
    }
    const { maxConnections, handshakeTimeoutMs, idleTimeoutMs } = this.limits;
    const live = new Map<string, Tracked>();
    const open: { key: string; fd: number; remotePort: number; t: Tracked }[] = [];
    for (const s of sockets) {
      const key = `${s.fd}:${s.remotePort}`;
      const t = this.#conns.get(key) ?? { seenAt: now, closed: false };
      live.set(key, t);
      if (!t.closed) open.push({ key, fd: s.fd, remotePort: s.remotePort!, t });
    }
    let gone = false;
    for (const key of this.#conns.keys()) if (!live.has(key)) gone = true;
    this.#conns = live;
    if (gone) this.onGone?.();
    const ports = new Set(open.map((c) => c.remotePort));
    for (const p of this.#requests.keys()) if (!ports.has(p)) this.#requests.delete(p);

    let closed = 0;
    const close = (c: (typeof open)[number], why: "cap" | "handshake" | "idle") => {
      if (c.t.closed) return;
      c.t.closed = true;
      libc().shutdown(c.fd, SHUT_RDWR);
      this.counts[why]++;
      closed++;
    };
    if (open.length > maxConnections) {
      // Idlest first: connections with no request in flight, quiet longest first, make room for
      // the new ones; busy ones keep their service (and only when all are busy, the newest go).
      const quietMs = (c: (typeof open)[number]) => {
        if ((this.#requests.get(c.remotePort)?.inflight ?? 0) > 0) return -1;
        const ti = tcpInfo(c.fd);
        return ti ? Math.min(ti.sentAgo, ti.recvAgo) : 0;
      };
      const ranked = open.map((c) => ({ c, quiet: quietMs(c) }));
      ranked.sort((a, b) => b.quiet - a.quiet || b.c.t.seenAt - a.c.t.seenAt || b.c.fd - a.c.fd);
      for (const { c } of ranked.slice(0, open.length - maxConnections)) close(c, "cap");
    }
    for (const c of open) {
      if (c.t.closed) continue;
      const req = this.#requests.get(c.remotePort);
      const ti = tcpInfo(c.fd);
      if (!ti || !ti.established) continue;
      if (!req?.started) {
        if (now - c.t.seenAt > handshakeTimeoutMs) close(c, "handshake");
      } else if (req.inflight === 0 && Math.min(ti.sentAgo, ti.recvAgo) > idleTimeoutMs) {
        close(c, "idle");
      }
    }
    return closed;
  }

  /** Connections seen open by the last sweep. */
  get open(): number {
    let n = 0;
    for (const t of this.#conns.values()) if (!t.closed) n++;
    return n;
  }

  /** Stops watching. Idempotent. */
  close(): void {
    clearInterval(this.#timer);
    this.#reserve?.close();
    this.#reserve = undefined;
  }
}
