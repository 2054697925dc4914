/**
 * The peers scenario's reference servers and hosts, on the peer CPU:
 * processes started and stopped, and the h3 ones (gtlsserver, the h3
 * module's C host) started by interop's one starter with a dev PKI and
 * awaited until they answer.
 */
import { onServerCpu, placement } from "../measure/affinity.ts";
import { createDevPki, DEV_PKI_FILES } from "../../transports/pki.ts";
import { ensureBuilt } from "../../lib/native_build.ts";
import { startGtlsServer, startH3Process } from "../../interop/peers.ts";
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

/** Runs `start` with the peer CPU's placement; a server that never answers is a {@linkcode PeerError}. */
async function onPeerCpu(
  start: (command: (exe: string, args: string[]) => [string, string[]]) => Promise<H3Peer>,
): Promise<H3Peer> {
  const p = await placement();
  try {
    return await start((exe, args) => onServerCpu(p, exe, args));
  } catch (err) {
    throw new PeerError((err as Error).message, { cause: err });
  }
}

/** gtlsserver (ngtcp2's example server, through interop's one starter), answering `/<n>` with n bytes. */
export async function startGtlsserver(size: number): Promise<H3Peer> {
  const pki = await createDevPki();
  return onPeerCpu((command) => startGtlsServer(pki, { readyPath: `/${size}`, command }));
}

/** sbilab's h3 module in a C loop (bench/native/h3host.c), answering every path with `size` bytes. */
export async function startH3Host(size: number): Promise<H3Peer> {
  const exe = await ensureBuilt("h3host", { quiet: true });
  const pki = await createDevPki();
  return onPeerCpu((command) =>
    startH3Process((dir, port) => [exe, [
      `${dir}/${DEV_PKI_FILES.serverCert}`,
      `${dir}/${DEV_PKI_FILES.serverKey}`,
      String(port),
      String(size),
    ]], { name: "the h3 module's C host", pki, readyPath: `/${size}`, command })
  );
}
