/**
 * Small facts about the host every part of sbilab asks for, answered in one
 * place: where the repository is, where a tool is, which port is free.
 */

/** Repository root (this file lives in `lib/`), without a trailing slash. */
export const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** Finds an executable on PATH (and in the sbin folders); undefined when absent. */
export function findTool(name: string): string | undefined {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":").concat(["/usr/sbin", "/sbin"])) {
    if (!dir) continue;
    try {
      if (Deno.statSync(`${dir}/${name}`).isFile) return `${dir}/${name}`;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

/** Whether anything (file, folder, device) exists at `path`. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** A free TCP port on `hostname` (bound, then released). */
export function freePort(hostname = "127.0.0.1"): number {
  const l = Deno.listen({ hostname, port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Resolves once a TCP port on 127.0.0.1 accepts connections; rejects after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      c.close();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`Port ${port} did not open within ${timeoutMs} ms`);
}

/**
 * Waits until some process has a UDP socket bound to `port` (read from
 * `/proc/net/udp`; no datagram sent), polling every 50 ms.
 * @throws {Error} after `timeoutMs`
 */
export async function waitForUdpPort(port: number, timeoutMs = 5000): Promise<void> {
  const local = new RegExp(
    `^\\s*\\d+: [0-9A-F]{8}:${port.toString(16).toUpperCase().padStart(4, "0")} `,
    "m",
  );
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (local.test(await Deno.readTextFile("/proc/net/udp"))) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`UDP port ${port} was not bound within ${timeoutMs} ms`);
}

/** A free UDP port on `hostname` (bound, then released). */
export function freeUdpPort(hostname = "127.0.0.1"): number {
  const s = Deno.listenDatagram({ transport: "udp", hostname, port: 0 });
  const port = (s.addr as Deno.NetAddr).port;
  s.close();
  return port;
}
