/**
 * A cluster on one box: N network namespaces ("pods"), each with its own
 * address on one bridge in the host's namespace, so N processes reach a
 * server bound to the bridge's address across veth as pods reach a Service.
 * Every namespace and device is named after the net's id and removed by name
 * on close (also when opening fails half-way, and on the process's exit path).
 * Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN).
 *
 * ```ts
 * await using net = await openPodNet(4);
 * const server = await createServer("h2c", handler, { hostname: net.hostAddr });
 * const child = net.exec(0, ["lab", "load", server.url, "--shard", "0/4"]);
 * ```
 *
 * @module
 */
import { killQuiet, namespacePids, requireNetAdmin, run, runSyncQuiet } from "./_system.ts";
import type { ExecOptions } from "./link.ts";

/** Prefix of a pod net's namespaces (`sblpod-<id>-<i>`), apart from links' so their cleanup leaves them. */
export const POD_NS_PREFIX = "sblpod-";
/** Prefix of its devices: the bridge `sbp<id>` and the host ends `sbp<id>-<i>`. */
export const POD_DEV_PREFIX = "sbp";

/** One pod: its namespace, its address and the host end of its veth pair. */
export interface Pod {
  ns: string;
  addr: string;
  hostIf: string;
}

const open = new Set<PodNet>();
globalThis.addEventListener("unload", () => {
  for (const n of open) n.closeSync();
});

/** N pods on one bridge; `close()` (or `await using`) removes everything it made. */
export class PodNet {
  /** The bridge's address, where a server in the host's namespace listens for the pods. */
  readonly hostAddr: string;
  readonly bridge: string;
  readonly pods: Pod[];
  readonly id: string;
  #children = new Set<Deno.ChildProcess>();
  #made: { ns: string[]; devs: string[] } = { ns: [], devs: [] };
  #closing?: Promise<void>;

  constructor(id: string, octet: number, count: number) {
    this.id = id;
    this.bridge = `${POD_DEV_PREFIX}${id}`;
    this.hostAddr = `10.203.${octet}.1`;
    this.pods = Array.from({ length: count }, (_, i) => ({
      ns: `${POD_NS_PREFIX}${id}-${i}`,
      addr: `10.203.${octet}.${10 + i}`,
      hostIf: `${POD_DEV_PREFIX}${id}-${i}`,
    }));
  }

  /** Creates the bridge and the pods; on failure removes what was made and rethrows. */
  async setUp(): Promise<void> {
    try {
      await run("ip", ["link", "add", this.bridge, "type", "bridge"]);
      this.#made.devs.push(this.bridge);
      await run("ip", ["addr", "add", `${this.hostAddr}/24`, "dev", this.bridge]);
      await run("ip", ["link", "set", this.bridge, "up"]);
      for (const pod of this.pods) {
        await run("ip", ["netns", "add", pod.ns]);
        this.#made.ns.push(pod.ns);
        await run("ip", [
          "link",
          "add",
          pod.hostIf,
          "type",
          "veth",
          "peer",
          "name",
          "eth0",
          "netns",
          pod.ns,
        ]);
        this.#made.devs.push(pod.hostIf);
        await run("ip", ["link", "set", pod.hostIf, "master", this.bridge]);
        await run("ip", ["link", "set", pod.hostIf, "up"]);
        await run("ip", ["-n", pod.ns, "link", "set", "lo", "up"]);
        await run("ip", ["-n", pod.ns, "addr", "add", `${pod.addr}/24`, "dev", "eth0"]);
        await run("ip", ["-n", pod.ns, "link", "set", "eth0", "up"]);
      }
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  /** Spawns `cmd` inside pod `i` (`ip netns exec`); it is killed on close. */
  exec(i: number, cmd: string[], options: ExecOptions = {}): Deno.ChildProcess {
    if (this.#closing) throw new Error(`Pod net ${this.id} is closed`);
    const pod = this.pods[i];
    if (!pod) throw new RangeError(`No pod ${i} (0-${this.pods.length - 1})`);
    const child = new Deno.Command("ip", { ...options, args: ["netns", "exec", pod.ns, ...cmd] })
      .spawn();
    this.#children.add(child);
    child.status.finally(() => this.#children.delete(child));
    return child;
  }

  /** Kills what runs inside, removes the namespaces and devices by name; idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    for (const c of this.#children) killQuiet(c.pid, "SIGKILL");
    await Promise.all([...this.#children].map((c) => c.status.catch(() => {})));
    for (const ns of this.#made.ns) {
      for (const pid of await namespacePids(ns)) killQuiet(pid, "SIGKILL");
      await run("ip", ["netns", "del", ns]).catch(() => {});
    }
    // the pods' veth pairs went with their namespaces; delete by name whatever is left
    for (const dev of this.#made.devs.reverse()) {
      await run("ip", ["link", "del", dev]).catch(() => {});
    }
    open.delete(this);
  }

  /** Best-effort synchronous removal for the exit path. */
  closeSync(): void {
    for (const c of this.#children) killQuiet(c.pid, "SIGKILL");
    for (const ns of this.#made.ns) {
      runSyncQuiet("sh", ["-c", `ip netns pids ${ns} | xargs -r kill -9`]);
      runSyncQuiet("ip", ["netns", "del", ns]);
    }
    for (const dev of this.#made.devs) runSyncQuiet("ip", ["link", "del", dev]);
    open.delete(this);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** Opens `count` pods on a fresh bridge whose 10.203.x.0/24 no route of the host uses. */
export async function openPodNet(count: number): Promise<PodNet> {
  if (!Number.isInteger(count) || count < 1 || count > 200) {
    throw new RangeError(`A pod net holds 1-200 pods, got ${count}`);
  }
  requireNetAdmin();
  const routes = await run("ip", ["-4", "route", "show"]);
  const used = new Set([...routes.matchAll(/10\.203\.(\d+)\./g)].map((m) => Number(m[1])));
  const free = Array.from({ length: 256 }, (_, i) => i).filter((o) => !used.has(o));
  if (!free.length) throw new Error("No free 10.203.x.0/24 for a pod net");
  const octet = free[Math.floor(Math.random() * free.length)];
  const id = (Deno.pid % 0x10000).toString(16).padStart(4, "0") +
    octet.toString(16).padStart(2, "0");
  const net = new PodNet(id, octet, count);
  open.add(net);
  await net.setUp();
  return net;
}
