/**
 * An emulated link: two network namespaces (client and server side) joined
 * either by the userspace TUN relay (default), by a veth pair shaped with
 * `tc netem` (where the kernel has it), or by a plain veth pair (`veth`: no
 * impairment at all, for runs where only the MTU should differ from
 * loopback).
 *
 * @module
 */
import { ensureBuilt } from "../lib/native_build.ts";
import { onInterrupt } from "../lib/interrupt.ts";
import {
  DEFAULT_STATE_DIR,
  DEV_PREFIX,
  killQuiet,
  type LinkState,
  namespacePids,
  NS_PREFIX,
  processStart,
  readStates,
  removeStateSync,
  requireNetAdmin,
  run,
  runSyncQuiet,
  writeState,
} from "./_system.ts";
import type { LinkSpec } from "./link_spec.ts";
import { netemQdiscArgs, requireNetem } from "./netem.ts";
import { relayArgs, RelayProcess, type RelayStats } from "./relay.ts";

/** How the two namespaces are joined. */
export type LinkBackend = "relay" | "netem" | "veth";

/** Which end of the link. */
export type LinkSide = "client" | "server";

/** Options for {@link openLink}. */
export interface OpenLinkOptions {
  /** `relay` (userspace TUN relay), `netem` (veth + tc netem) or `veth` (plain). Default `relay`. */
  backend?: LinkBackend;
  /** MTU of both devices in bytes (1280…65535). Default: the kernel's (1500). */
  mtu?: number;
  /** Link id: 1–8 lowercase letters or digits, part of every name. Default: 6 random hex digits. */
  id?: string;
  /** Seed of the relay's random decisions. Default: the spec's `seed`, else 1. */
  seed?: number;
  /** Folder of state files used by `lab link cleanup`. Default `/run/sbilab/links`
   * (or SBILAB_LINK_STATE_DIR). */
  stateDir?: string;
  /** Remove the link when the process is interrupted (SIGINT, SIGTERM) and at exit. Default true. */
  autoCleanup?: boolean;
}

/** Options for {@link Link.exec}: those of `Deno.Command` except `args`. */
export type ExecOptions = Omit<Deno.CommandOptions, "args">;

/** An open link. Close it (or `await using` it) to remove everything it made. */
export interface Link {
  /** Link id. */
  readonly id: string;
  /** The spec it emulates. */
  readonly spec: LinkSpec;
  /** How the namespaces are joined. */
  readonly backend: LinkBackend;
  /** Namespace names (`sbilab-<id>-c`, `sbilab-<id>-s`). */
  readonly clientNs: string;
  readonly serverNs: string;
  /** Device names inside them (`sbl-<id>-c`, `sbl-<id>-s`). */
  readonly clientIf: string;
  readonly serverIf: string;
  /** IPv4 link-local addresses (169.254.x.1 and 169.254.x.2, a /30). */
  readonly clientAddr: string;
  readonly serverAddr: string;
  /** Pid of the relay process (undefined for netem). */
  readonly relayPid: number | undefined;
  /** Spawns `cmd` inside one side's namespace (`ip netns exec`); it is killed on close. */
  exec(side: LinkSide, cmd: string[], options?: ExecOptions): Deno.ChildProcess;
  /** Current relay counters (undefined for netem). */
  stats(): Promise<RelayStats | undefined>;
  /** Makes the relay act as a NAT that moves the client to a new source port
   * (TCP and UDP): from now on the server sees every client flow at another
   * port, the client sees nothing. Resolves with the rebind epoch (1, 2, …).
   * Other processes can do the same with `kill -USR2 <relayPid>`.
   * @throws {Error} on the netem backend or a closed link. */
  rebind(): Promise<number>;
  /** Resolves with the final relay counters once the link is closed. */
  readonly closed: Promise<RelayStats | undefined>;
  /** Kills what runs inside, stops the relay, removes namespaces, devices and
   * state. Idempotent; resolves with the relay's final counters. */
  close(): Promise<RelayStats | undefined>;
  [Symbol.asyncDispose](): Promise<void>;
}

// ---- process-wide registry: remove open links on interrupts and at exit ----

const openLinks = new Set<LinkImpl>();
let unregister: (() => void) | undefined;

function onUnload(): void {
  for (const l of openLinks) l.closeSync();
}

function track(link: LinkImpl): void {
  openLinks.add(link);
  if (unregister) return;
  // An interrupt closes every open link before the process ends (lib/interrupt.ts).
  unregister = onInterrupt(() => Promise.allSettled([...openLinks].map((l) => l.close())));
  globalThis.addEventListener("unload", onUnload);
}

function untrack(link: LinkImpl): void {
  openLinks.delete(link);
  if (!unregister || openLinks.size > 0) return;
  unregister();
  unregister = undefined;
  globalThis.removeEventListener("unload", onUnload);
}

// ---- the link ----------------------------------------------------------

class LinkImpl implements Link {
  readonly id: string;
  readonly spec: LinkSpec;
  readonly backend: LinkBackend;
  readonly clientNs: string;
  readonly serverNs: string;
  readonly clientIf: string;
  readonly serverIf: string;
  readonly clientAddr: string;
  readonly serverAddr: string;
  readonly closed: Promise<RelayStats | undefined>;
  #state: LinkState;
  #stateDir: string;
  #relay: RelayProcess | undefined;
  #children = new Set<Deno.ChildProcess>();
  #closing: Promise<RelayStats | undefined> | undefined;
  #mtu: number | undefined;
  #resolveClosed!: (s: RelayStats | undefined) => void;

  constructor(
    spec: LinkSpec,
    backend: LinkBackend,
    state: LinkState,
    stateDir: string,
    mtu?: number,
  ) {
    this.#mtu = mtu;
    this.spec = spec;
    this.backend = backend;
    this.id = state.id;
    this.clientNs = state.clientNs;
    this.serverNs = state.serverNs;
    this.clientIf = state.clientIf;
    this.serverIf = state.serverIf;
    this.clientAddr = `169.254.${state.octet}.1`;
    this.serverAddr = `169.254.${state.octet}.2`;
    this.#state = state;
    this.#stateDir = stateDir;
    this.closed = new Promise((r) => (this.#resolveClosed = r));
  }

  get relayPid(): number | undefined {
    return this.#relay?.pid;
  }

  async setUp(seed: number): Promise<void> {
    await writeState(this.#stateDir, this.#state);
    await run("ip", ["netns", "add", this.clientNs]);
    await run("ip", ["netns", "add", this.serverNs]);
    if (this.backend === "relay") {
      const relayPath = await ensureBuilt("linkrelay", { quiet: true });
      const relay = new RelayProcess(relayPath, [
        "--client-ns",
        `/run/netns/${this.clientNs}`,
        "--server-ns",
        `/run/netns/${this.serverNs}`,
        "--client-if",
        this.clientIf,
        "--server-if",
        this.serverIf,
        "--exit-on-stdin-eof",
        ...relayArgs(this.spec, seed),
      ]);
      this.#relay = relay;
      this.#state.relayPid = relay.pid;
      this.#state.relayStart = processStart(relay.pid);
      await writeState(this.#stateDir, this.#state);
      const ready = await relay.next(5000);
      if (ready?.event !== "ready") {
        await waitOrKill(relay.child, 100);
        await relay.done;
        throw new Error(`Link relay did not start: ${relay.stderrLine || "no output"}`);
      }
    } else {
      await run("ip", [
        "link",
        "add",
        this.clientIf,
        "netns",
        this.clientNs,
        "type",
        "veth",
        "peer",
        "name",
        this.serverIf,
        "netns",
        this.serverNs,
      ]);
    }
    for (
      const [ns, dev, addr] of [
        [this.clientNs, this.clientIf, this.clientAddr],
        [this.serverNs, this.serverIf, this.serverAddr],
      ]
    ) {
      await run("ip", ["-n", ns, "link", "set", "lo", "up"]);
      if (this.#mtu !== undefined) {
        await run("ip", ["-n", ns, "link", "set", "dev", dev, "mtu", String(this.#mtu)]);
      }
      // A long device queue: when the relay waits for a CPU (a busy host), packets queue in the
      // kernel instead of being dropped there, so only the relay's own model drops them.
      await run("ip", ["-n", ns, "link", "set", "dev", dev, "txqueuelen", "10000"]);
      await run("ip", ["-n", ns, "addr", "add", `${addr}/30`, "dev", dev]);
      await run("ip", ["-n", ns, "link", "set", dev, "up"]);
    }
    if (this.backend === "netem") {
      await run("tc", ["-n", this.clientNs, ...netemQdiscArgs(this.clientIf, this.spec.up)]);
      await run("tc", ["-n", this.serverNs, ...netemQdiscArgs(this.serverIf, this.spec.down)]);
    }
  }

  exec(side: LinkSide, cmd: string[], options: ExecOptions = {}): Deno.ChildProcess {
    if (this.#closing) throw new Error(`Link ${this.id} is closed`);
    if (cmd.length === 0) throw new TypeError("exec needs a command");
    const ns = side === "client" ? this.clientNs : this.serverNs;
    const child = new Deno.Command("ip", { ...options, args: ["netns", "exec", ns, ...cmd] })
      .spawn();
    this.#children.add(child);
    child.status.finally(() => this.#children.delete(child));
    return child;
  }

  async stats(): Promise<RelayStats | undefined> {
    const relay = this.#relay;
    if (!relay || this.#closing) return relay?.exitStats;
    relay.discardUnclaimed();
    const next = relay.next(2000);
    killQuiet(relay.pid, "SIGUSR1");
    const event = await next;
    return event?.event === "stats" ? RelayProcess.toStats(event) : undefined;
  }

  async rebind(): Promise<number> {
    const relay = this.#relay;
    if (!relay) throw new Error("Rebinding needs the relay backend");
    if (this.#closing) throw new Error(`Link ${this.id} is closed`);
    relay.discardUnclaimed();
    const next = relay.next(2000);
    killQuiet(relay.pid, "SIGUSR2");
    const event = await next;
    if (event?.event !== "rebind") throw new Error("The link relay did not confirm the rebind");
    return event.epoch as number;
  }

  close(): Promise<RelayStats | undefined> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<RelayStats | undefined> {
    // 1. Processes the caller started inside: ask, then insist.
    const children = [...this.#children];
    for (const c of children) killQuiet(c.pid, "SIGTERM");
    await Promise.all(children.map((c) => waitOrKill(c, 2000)));
    // 2. Anything else still inside the namespaces.
    for (const ns of [this.clientNs, this.serverNs]) {
      for (const pid of await namespacePids(ns)) killQuiet(pid, "SIGKILL");
    }
    // 3. The relay prints its final counters on SIGTERM.
    let stats: RelayStats | undefined;
    const relay = this.#relay;
    if (relay) {
      killQuiet(relay.pid, "SIGTERM");
      await waitOrKill(relay.child, 2000);
      await relay.done;
      stats = relay.exitStats;
    }
    // 4. Namespaces (their devices go with them) and the state file.
    for (const ns of [this.clientNs, this.serverNs]) {
      await run("ip", ["netns", "del", ns]).catch(() => {});
    }
    removeStateSync(this.#stateDir, this.id);
    untrack(this);
    this.#resolveClosed(stats);
    return stats;
  }

  /** Best-effort synchronous removal for the process's exit path. */
  closeSync(): void {
    if (this.#closing) return;
    this.#closing = Promise.resolve(undefined);
    for (const c of this.#children) killQuiet(c.pid, "SIGKILL");
    if (this.#relay) killQuiet(this.#relay.pid, "SIGTERM");
    for (const ns of [this.clientNs, this.serverNs]) {
      // kills whatever is left inside, then removes the namespace
      runSyncQuiet("sh", ["-c", `ip netns pids ${ns} | xargs -r kill -9`]);
      runSyncQuiet("ip", ["netns", "del", ns]);
    }
    removeStateSync(this.#stateDir, this.id);
    untrack(this);
    this.#resolveClosed(undefined);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

async function waitOrKill(child: Deno.ChildProcess, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), ms)));
  const result = await Promise.race([child.status, timeout]);
  clearTimeout(timer);
  if (result === "timeout") {
    killQuiet(child.pid, "SIGKILL");
    await child.status;
  }
}

function randomId(): string {
  const b = crypto.getRandomValues(new Uint8Array(3));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** Picks a third octet no other live link uses, starting from one derived from the id. */
function pickOctet(id: string, used: Set<number>): number {
  let h = 0;
  for (const ch of id) h = (h * 31 + ch.charCodeAt(0)) % 250;
  for (let i = 0; i < 250; i++) {
    const octet = ((h + i) % 250) + 1; // 1..250
    if (!used.has(octet)) return octet;
  }
  throw new Error("No free 169.254.x.0/30 pair: run lab link cleanup");
}

/** True when `spec` asks for no delay, loss, rate limit, reordering, duplication or blackhole. */
function impairmentFree(spec: LinkSpec): boolean {
  const quiet = (d: LinkSpec["up"]) =>
    d.delayMs === 0 && d.jitterMs === 0 && d.loss === 0 && d.rateBps === 0 && d.reorder === 0 &&
    d.dup === 0;
  return quiet(spec.up) && quiet(spec.down) && !spec.blackhole;
}

/**
 * Opens an emulated link: two fresh namespaces joined as `spec` describes.
 * Needs root. Everything it creates is named with the `sbilab-`/`sbl-`
 * prefix and the link id, and is recorded in a state file so that
 * `lab link cleanup` can remove it if this process dies.
 *
 * @throws {Deno.errors.PermissionDenied} without CAP_NET_ADMIN/CAP_SYS_ADMIN.
 * @throws {Error} when the netem backend is asked for on a kernel without it.
 */
export async function openLink(spec: LinkSpec, options: OpenLinkOptions = {}): Promise<Link> {
  requireNetAdmin();
  const backend = options.backend ?? "relay";
  if (backend !== "relay" && backend !== "netem" && backend !== "veth") {
    throw new RangeError(`Unknown link backend "${backend}" (known: relay, netem, veth)`);
  }
  if (backend === "veth" && !impairmentFree(spec)) {
    throw new RangeError("The veth backend emulates no delay, loss or rate: use relay or netem");
  }
  if (
    options.mtu !== undefined &&
    !(Number.isInteger(options.mtu) && options.mtu >= 1280 && options.mtu <= 65535)
  ) {
    throw new RangeError(
      `Link MTU must be a whole number of bytes in 1280…65535, got ${options.mtu}`,
    );
  }
  const id = options.id ?? randomId();
  if (!/^[a-z0-9]{1,8}$/.test(id)) {
    throw new RangeError(`Bad link id "${id}" (expected 1-8 lowercase letters or digits)`);
  }
  if (backend === "netem") await requireNetem(spec);
  const stateDir = options.stateDir ?? DEFAULT_STATE_DIR;
  const states = await readStates(stateDir);
  if (states.some((s) => s.id === id)) throw new Error(`Link ${id} already exists`);
  const state: LinkState = {
    id,
    backend,
    ownerPid: Deno.pid,
    ownerStart: processStart(Deno.pid) ?? 0,
    clientNs: `${NS_PREFIX}${id}-c`,
    serverNs: `${NS_PREFIX}${id}-s`,
    clientIf: `${DEV_PREFIX}${id}-c`,
    serverIf: `${DEV_PREFIX}${id}-s`,
    octet: pickOctet(id, new Set(states.map((s) => s.octet))),
    createdAt: new Date().toISOString(),
  };
  const link = new LinkImpl(spec, backend, state, stateDir, options.mtu);
  if (options.autoCleanup ?? true) track(link);
  try {
    await link.setUp(options.seed ?? spec.seed ?? 1);
  } catch (err) {
    await link.close();
    throw err;
  }
  return link;
}
