/**
 * The peers scenario's reference servers and hosts, on the peer CPU:
 * processes started and stopped, and the h3 ones (gtlsserver, the h3
 * module's C host) started with a dev PKI and awaited until they answer.
 */
import { onServerCpu, placement } from "../measure/affinity.ts";
import { findTool, freeUdpPort } from "../../lib/host.ts";
import { createDevPki, DEV_PKI_FILES, writeDevPki } from "../../transports/pki.ts";
import { ensureBuilt } from "../../lib/native_build.ts";
import type { ScenarioContext } from "./context.ts";
import { PeerError } from "./peer_loaders.ts";

/** Stops a child process and waits for it. */
export async function stop(child: Deno.ChildProcess): Promise<void> {
  try {
    child.kill("SIGTERM");
  } catch {
    // exited
  }
  await child.status;
}

/** Starts `exe args` on the peer CPU, output discarded. */
export async function spawnPeer(exe: string, args: string[]): Promise<Deno.ChildProcess> {
  const [cmd, cmdArgs] = onServerCpu(await placement(), exe, args);
  return new Deno.Command(cmd, {
    args: cmdArgs,
    stdout: "null",
    stderr: "null",
    stdin: "null",
  }).spawn();
}

/** A C reference server for the h3 rows, on the peer CPU. */
export interface H3Peer {
  port: number;
  close(): Promise<void>;
}

/**
 * Starts `exe` with the arguments `args(dir, port)` gives (`dir` holds a dev
 * PKI's files) on the peer CPU; resolves once it answers `path`.
 */
async function startH3Peer(
  ctx: ScenarioContext,
  name: string,
  exe: string,
  args: (dir: string, port: number) => string[],
  path: string,
): Promise<H3Peer> {
  const dir = await Deno.makeTempDir({ prefix: "sbilab-peers-h3-" });
  await writeDevPki(dir, await createDevPki());
  const port = freeUdpPort();
  const [cmd, cmdArgs] = onServerCpu(await placement(), exe, args(dir, port));
  const child = new Deno.Command(cmd, {
    args: cmdArgs,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const close = async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // exited
    }
    await child.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  // Until it has bound, a request fails at once (ICMP port unreachable).
  const probe = await ctx.openClient("h3", {
    origin: `https://127.0.0.1:${port}`,
    tls: { insecure: true },
    timeoutMs: 500,
  });
  let up = false;
  try {
    for (let i = 0; i < 100 && !up; i++) {
      up = await probe.request({ path }).then(() => true, () => false);
      if (!up) await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await probe.close();
  }
  if (!up) {
    await close();
    throw new PeerError(`${name} did not answer within 5 s`);
  }
  return { port, close };
}

/** gtlsserver (ngtcp2's example server), answering `/<n>` with n bytes. */
export function startGtlsserver(ctx: ScenarioContext, size: number): Promise<H3Peer> {
  return startH3Peer(ctx, "gtlsserver", findTool("gtlsserver")!, (dir, port) => [
    "-q",
    "127.0.0.1",
    String(port),
    `${dir}/${DEV_PKI_FILES.serverKey}`,
    `${dir}/${DEV_PKI_FILES.serverCert}`,
  ], `/${size}`);
}

/** sbilab's h3 module in a C loop (bench/native/h3host.c), answering every path with `size` bytes. */
export async function startH3Host(ctx: ScenarioContext, size: number): Promise<H3Peer> {
  const exe = await ensureBuilt("h3host", { quiet: true });
  return startH3Peer(ctx, "the h3 module's C host", exe, (dir, port) => [
    `${dir}/${DEV_PKI_FILES.serverCert}`,
    `${dir}/${DEV_PKI_FILES.serverKey}`,
    String(port),
    String(size),
  ], `/${size}`);
}
