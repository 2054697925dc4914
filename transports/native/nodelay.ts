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
 *
 * {@linkcode socketFd} finds the fd of one connection, for sends that need
 * no promise, without listing: it asks `getpeername` of fds from 0 upwards.
 */

import { libc } from "../../lib/libc.ts";

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

/** An IP address as 16 bytes (IPv4 as IPv4-mapped IPv6), or undefined when `text` is neither. */
export function addressBytes(text: string): Uint8Array | undefined {
  const out = new Uint8Array(16);
  const v4 = (t: string, at: number) => {
    const p = t.split(".");
    if (p.length !== 4) return false;
    for (let i = 0; i < 4; i++) {
      if (!/^\d{1,3}$/.test(p[i]) || Number(p[i]) > 255) return false;
      out[at + i] = Number(p[i]);
    }
    return true;
  };
  if (!text.includes(":")) {
    out[10] = out[11] = 0xff;
    return v4(text, 12) ? out : undefined;
  }
  const halves = text.replace(/%.*$/, "").split("::");
  if (halves.length > 2) return undefined;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  const head = groups(halves[0]), tail = halves.length === 2 ? groups(halves[1]) : [];
  const last = (tail.length ? tail : head).at(-1) ?? "";
  const dotted = last.includes(".");
  if (dotted) (tail.length ? tail : head).pop();
  const words = head.length + tail.length + (dotted ? 2 : 0);
  if (halves.length === 1 ? words !== 8 : words > 7) return undefined;
  const put = (g: string[], at: number) => {
    for (const [i, w] of g.entries()) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(w)) return false;
      const v = parseInt(w, 16);
      out[at + 2 * i] = v >> 8;
      out[at + 2 * i + 1] = v & 0xff;
    }
    return true;
  };
  const tailAt = 16 - 2 * tail.length - (dotted ? 4 : 0);
  if (!put(head, 0) || !put(tail, tailAt)) return undefined;
  return !dotted || v4(last, 12) ? out : undefined;
}

/** Whether `addrBuf` (a sockaddr from libc) holds `want`'s address and port. */
function sockaddrIs(want: Uint8Array, port: number): boolean {
  const family = addrBuf[0] | (addrBuf[1] << 8);
  if (((addrBuf[2] << 8) | addrBuf[3]) !== port) return false;
  if (family === AF_INET) {
    for (let i = 0; i < 10; i++) if (want[i] !== 0) return false;
    if (want[10] !== 0xff || want[11] !== 0xff) return false;
    for (let i = 0; i < 4; i++) if (want[12 + i] !== addrBuf[4 + i]) return false;
    return true;
  }
  if (family !== AF_INET6) return false;
  for (let i = 0; i < 16; i++) if (want[i] !== addrBuf[8 + i]) return false;
  return true;
}

const NO_FDS: ReadonlySet<number> = new Set();

/**
 * The fd of this process's TCP socket connected from `local` to `remote`,
 * matched on both addresses and ports (so no other socket can match), or
 * undefined: not found, or no libc. The kernel gives a new socket the lowest
 * free fd, so the search runs upwards from 0, skips the fds in `skip` (those
 * of other connections) and gives up 1024 fds beyond their count. Never
 * throws.
 */
export function socketFd(
  local: Deno.NetAddr,
  remote: Deno.NetAddr,
  skip: ReadonlySet<number> = NO_FDS,
): number | undefined {
  const l = addressBytes(local.hostname), r = addressBytes(remote.hostname);
  if (!l || !r) return undefined;
  try {
    const s = lib().symbols;
    for (let fd = 0, end = skip.size + 1024; fd < end; fd++) {
      if (skip.has(fd)) continue;
      // getpeername first: it fails at once on files, pipes, listening and unused fds
      lenBuf[0] = addrBuf.length;
      if (s.getpeername(fd, addrBuf, lenBuf) !== 0 || !sockaddrIs(r, remote.port)) continue;
      lenBuf[0] = addrBuf.length;
      if (s.getsockname(fd, addrBuf, lenBuf) !== 0 || !sockaddrIs(l, local.port)) continue;
      if (getInt(fd, SOL_SOCKET, SO_TYPE) === SOCK_STREAM) return fd;
    }
  } catch {
    // no libc
  }
  return undefined;
}

/** Lists matching TCP sockets with their TCP_NODELAY state (for tests). */
export function tcpSocketsNoDelay(target: NoDelayTarget): { fd: number; noDelay: boolean }[] {
  return tcpSockets().filter((s) => matches(target, s)).map((s) => ({
    fd: s.fd,
    noDelay: getNoDelay(s.fd) ?? false,
  }));
}
