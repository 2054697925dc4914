/**
 * The process's open-file limit. A server raises its soft limit to the hard
 * limit at start (as nginx and most servers do) and keeps some descriptors in
 * reserve for files, the UDP socket and libraries; the connection caps are
 * derived from what is left.
 */
import { libc } from "../lib/libc.ts";

const RLIMIT_NOFILE = 7;

/** The soft and hard open-file limits. */
export interface FdLimit {
  /** The limit in force. */
  soft: number;
  /** The ceiling an unprivileged process may raise it to. */
  hard: number;
}

/** Descriptors kept out of the connection caps: files, sockets, libraries, the h3 UDP socket. */
export const FD_RESERVE = 64;

function nrOpen(): number {
  try {
    return Number(Deno.readTextFileSync("/proc/sys/fs/nr_open").trim()) || 1 << 20;
  } catch {
    return 1 << 20;
  }
}

/** Reads the open-file limits; undefined where libc cannot be reached. */
export function getFdLimit(): FdLimit | undefined {
  try {
    const buf = new BigUint64Array(2);
    if (libc().getrlimit(RLIMIT_NOFILE, buf) !== 0) return undefined;
    const max = Number.MAX_SAFE_INTEGER;
    return { soft: Math.min(Number(buf[0]), max), hard: Math.min(Number(buf[1]), max) };
  } catch {
    return undefined;
  }
}

/**
 * Raises the soft open-file limit to the hard limit (bounded by the kernel's
 * `nr_open`) and returns the limits now in force. Never throws: where it
 * cannot, it returns what it read, or undefined.
 */
export function raiseFdLimit(): FdLimit | undefined {
  const now = getFdLimit();
  if (!now) return undefined;
  const target = Math.min(now.hard, nrOpen());
  if (target <= now.soft) return now;
  try {
    const buf = new BigUint64Array([BigInt(target), BigInt(now.hard)]);
    // The hard limit may read as RLIM_INFINITY: give it back unchanged.
    const read = new BigUint64Array(2);
    libc().getrlimit(RLIMIT_NOFILE, read);
    buf[1] = read[1];
    if (libc().setrlimit(RLIMIT_NOFILE, buf) !== 0) return now;
  } catch {
    return now;
  }
  return getFdLimit();
}

/**
 * Descriptors this process may still open under its soft limit: the limit
 * less the entries of `/proc/self/fd`. 0 when the listing itself cannot be
 * opened (the process is at its limit); undefined off Linux or without libc.
 */
export function freeFds(): number | undefined {
  const limit = getFdLimit();
  if (!limit) return undefined;
  let open = 0;
  try {
    // The listing holds one descriptor of its own while it is read: not counted.
    for (const _ of Deno.readDirSync("/proc/self/fd")) open++;
    open--;
  } catch (err) {
    if (/os error 2[34]/.test(String(err))) return 0;
    return undefined;
  }
  return Math.max(0, limit.soft - open);
}

/** Connections each of `listeners` TCP listeners may hold within `limit`, after the reserve. */
export function connectionsWithin(limit: FdLimit, listeners: number): number {
  return Math.max(1, Math.floor((limit.soft - FD_RESERVE) / Math.max(1, listeners)));
}
