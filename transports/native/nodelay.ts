/**
 * Sets TCP_NODELAY on sockets Deno does not expose: the listening socket of
 * `Deno.serve` (accepted sockets inherit it on Linux) and the connections
 * `fetch` opened. Without it a 16 KiB response over TLS waits for the peer's
 * delayed ACK (about 40 ms; see DESIGN.md).
 *
 * The process's sockets are listed from `/proc/self/fd`; each is identified
 * with `getsockopt`/`getsockname`/`getpeername` and changed with
 * `setsockopt`, all from libc through FFI. No global tables are read, so the
 * cost stays proportional to this process's open sockets (tens of µs).
 */

import { libc } from "./libc.ts";

const SOL_SOCKET = 1;
const SO_TYPE = 3;
const SO_ACCEPTCONN = 30;
const SOCK_STREAM = 1;
const IPPROTO_TCP = 6;
const TCP_NODELAY = 1;
const TCP_MAXSEG = 2;
const AF_INET = 2;
const AF_INET6 = 10;

function lib() {
  return { symbols: libc() };
}

const intBuf = new Int32Array(1);
const lenBuf = new Uint32Array(1);
const addrBuf = new Uint8Array(128);

function getInt(fd: number, level: number, name: number): number | undefined {
  lenBuf[0] = 4;
  return lib().symbols.getsockopt(fd, level, name, intBuf, lenBuf) === 0 ? intBuf[0] : undefined;
}

function port(fd: number, peer: boolean): number | undefined {
  lenBuf[0] = addrBuf.length;
  const s = lib().symbols;
  const rc = peer ? s.getpeername(fd, addrBuf, lenBuf) : s.getsockname(fd, addrBuf, lenBuf);
  if (rc !== 0) return undefined;
  const family = addrBuf[0] | (addrBuf[1] << 8);
  if (family !== AF_INET && family !== AF_INET6) return undefined;
  return (addrBuf[2] << 8) | addrBuf[3];
}

/** A TCP socket of this process. */
export interface TcpSocket {
  fd: number;
  listening: boolean;
  localPort?: number;
  remotePort?: number;
}

/** This process's TCP sockets, from `/proc/self/fd`. */
export function tcpSockets(): TcpSocket[] {
  const out: TcpSocket[] = [];
  for (const e of Deno.readDirSync("/proc/self/fd")) {
    let target: string;
    try {
      target = Deno.readLinkSync(`/proc/self/fd/${e.name}`);
    } catch {
      continue; // closed while listing
    }
    if (!target.startsWith("socket:")) continue;
    const fd = Number(e.name);
    if (getInt(fd, SOL_SOCKET, SO_TYPE) !== SOCK_STREAM) continue;
    const listening = getInt(fd, SOL_SOCKET, SO_ACCEPTCONN) === 1;
    out.push({
      fd,
      listening,
      localPort: port(fd, false),
      remotePort: listening ? undefined : port(fd, true),
    });
  }
  return out;
}

/** Which sockets of this process to change. */
export interface NoDelayTarget {
  /** Listening sockets bound to this local port. */
  listenPort?: number;
  /** Connected sockets to this remote port. */
  remotePort?: number;
  /** Connected sockets accepted on this local port. */
  localPort?: number;
}

function matches(t: NoDelayTarget, s: TcpSocket): boolean {
  if (s.listening) return t.listenPort !== undefined && s.localPort === t.listenPort;
  if (s.remotePort === undefined) return false;
  return (t.remotePort !== undefined && s.remotePort === t.remotePort) ||
    (t.localPort !== undefined && s.localPort === t.localPort);
}

/** Reads TCP_NODELAY of an fd; undefined when it is not a TCP socket. */
export function getNoDelay(fd: number): boolean | undefined {
  const v = getInt(fd, IPPROTO_TCP, TCP_NODELAY);
  return v === undefined ? undefined : v !== 0;
}

/** Sets TCP_NODELAY on matching sockets that lack it; returns the fds changed. Never throws. */
export function applyNoDelay(target: NoDelayTarget): number[] {
  const changed: number[] = [];
  try {
    for (const s of tcpSockets()) {
      if (!matches(target, s) || getNoDelay(s.fd) !== false) continue;
      intBuf[0] = 1;
      if (lib().symbols.setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, intBuf, 4) === 0) {
        changed.push(s.fd);
      }
    }
  } catch {
    // No /proc or no libc: Nagle stays on, and the Nagle regression tests say so.
  }
  return changed;
}

/** TCP_MAXSEG of the first connected socket matching `target`, or undefined. Never throws. */
export function tcpMaxSegment(target: NoDelayTarget): number | undefined {
  try {
    const s = tcpSockets().find((s) => !s.listening && matches(target, s));
    return s ? getInt(s.fd, IPPROTO_TCP, TCP_MAXSEG) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The fd of this process's one connected TCP socket from `localPort` to
 * `remotePort`, or undefined: none, more than one (peers on two hosts may
 * use the same port), or no /proc or libc. The caller's own open socket is
 * among those that match, so a single match is it. Never throws.
 */
export function connectedFd(localPort: number, remotePort: number): number | undefined {
  try {
    let found: number | undefined;
    for (const e of Deno.readDirSync("/proc/self/fd")) {
      const fd = Number(e.name);
      // getpeername first: it fails at once on files, pipes and listening sockets
      if (port(fd, true) !== remotePort || port(fd, false) !== localPort) continue;
      if (getInt(fd, SOL_SOCKET, SO_TYPE) !== SOCK_STREAM) continue;
      if (found !== undefined) return undefined;
      found = fd;
    }
    return found;
  } catch {
    return undefined;
  }
}

/** Lists matching TCP sockets with their TCP_NODELAY state (for tests). */
export function tcpSocketsNoDelay(target: NoDelayTarget): { fd: number; noDelay: boolean }[] {
  return tcpSockets().filter((s) => matches(target, s)).map((s) => ({
    fd: s.fd,
    noDelay: getNoDelay(s.fd) ?? false,
  }));
}
