/**
 * Sets TCP_NODELAY on sockets Deno does not expose: the listening socket of
 * `Deno.serve` (accepted sockets inherit it on Linux) and the connections
 * `fetch` opened. Without it a 16 KiB response over TLS waits for the peer's
 * delayed ACK (about 40 ms; see DESIGN.md). Sockets are found through
 * `/proc/self/fd` and `/proc/self/net/tcp{,6}`; the option is set with
 * libc's `setsockopt` through FFI.
 */

const IPPROTO_TCP = 6;
const TCP_NODELAY = 1;
const TCP_LISTEN = "0A";
const TCP_ESTABLISHED = "01";

let libc: Deno.DynamicLibrary<{
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"]; result: "i32" };
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"]; result: "i32" };
}> | undefined;

function lib() {
  libc ??= Deno.dlopen("libc.so.6", {
    setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" },
    getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
  });
  return libc;
}

interface TcpEntry {
  inode: string;
  localPort: number;
  remotePort: number;
  state: string;
}

function readTcpTable(): TcpEntry[] {
  const out: TcpEntry[] = [];
  for (const file of ["/proc/self/net/tcp", "/proc/self/net/tcp6"]) {
    let text: string;
    try {
      text = Deno.readTextFileSync(file);
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      out.push({
        localPort: parseInt(f[1].split(":")[1], 16),
        remotePort: parseInt(f[2].split(":")[1], 16),
        state: f[3],
        inode: f[9],
      });
    }
  }
  return out;
}

function socketFds(): Map<string, number> {
  const byInode = new Map<string, number>();
  for (const e of Deno.readDirSync("/proc/self/fd")) {
    try {
      const target = Deno.readLinkSync(`/proc/self/fd/${e.name}`);
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m) byInode.set(m[1], Number(e.name));
    } catch {
      // fd closed while listing
    }
  }
  return byInode;
}

function setNoDelay(fd: number): boolean {
  const one = new Int32Array([1]);
  return lib().symbols.setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, one, 4) === 0;
}

/** Reads TCP_NODELAY of an fd (for tests); undefined when not a TCP socket. */
export function getNoDelay(fd: number): boolean | undefined {
  const v = new Int32Array(1);
  const len = new Uint32Array([4]);
  if (lib().symbols.getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, v, len) !== 0) return undefined;
  return v[0] !== 0;
}

/** Which sockets of this process to change. */
export interface NoDelayTarget {
  /** Listening sockets bound to this local port. */
  listenPort?: number;
  /** Established connections to this remote port. */
  remotePort?: number;
  /** Established connections accepted on this local port. */
  localPort?: number;
}

function matches(target: NoDelayTarget, e: TcpEntry): boolean {
  if (e.state !== TCP_ESTABLISHED) return false;
  return e.remotePort === target.remotePort || e.localPort === target.localPort;
}

/** Sets TCP_NODELAY on matching sockets; returns the fds changed. Never throws. */
export function applyNoDelay(target: NoDelayTarget): number[] {
  const changed: number[] = [];
  try {
    const fds = socketFds();
    for (const e of readTcpTable()) {
      const listen = target.listenPort !== undefined && e.state === TCP_LISTEN &&
        e.localPort === target.listenPort;
      if (!listen && !matches(target, e)) continue;
      const fd = fds.get(e.inode);
      if (fd !== undefined && setNoDelay(fd)) changed.push(fd);
    }
  } catch {
    // No /proc or no libc: Nagle stays on, figures will show it.
  }
  return changed;
}

/** Lists this process's TCP fds with their TCP_NODELAY state (for tests and `lab doctor`). */
export function tcpSocketsNoDelay(target: NoDelayTarget): { fd: number; noDelay: boolean }[] {
  const fds = socketFds();
  const out: { fd: number; noDelay: boolean }[] = [];
  for (const e of readTcpTable()) {
    const hit = (target.listenPort !== undefined && e.state === TCP_LISTEN &&
      e.localPort === target.listenPort) || matches(target, e);
    const fd = hit ? fds.get(e.inode) : undefined;
    if (fd !== undefined) out.push({ fd, noDelay: getNoDelay(fd) ?? false });
  }
  return out;
}
