/**
 * Private helpers for linkemu: running `ip`/`tc`, identifying processes,
 * checking privileges and reading/writing link state files.
 *
 * @module
 */

/** Prefix of every namespace a link creates (`sbilab-<id>-c`, `sbilab-<id>-s`). */
export const NS_PREFIX = "sbilab-";
/** Prefix of every network device a link creates (`sbl-<id>-c`, `sbl-<id>-s`). */
export const DEV_PREFIX = "sbl-";
/** Where link state files live; override with SBILAB_LINK_STATE_DIR. */
export const DEFAULT_STATE_DIR = Deno.env.get("SBILAB_LINK_STATE_DIR") ?? "/run/sbilab/links";

/** What a state file records about one link, so a later cleanup can undo it. */
export interface LinkState {
  /** Link id (also in every name). */
  id: string;
  /** `relay` or `netem`. */
  backend: "relay" | "netem" | "veth";
  /** Process that opened the link, with its start time (guards pid reuse). */
  ownerPid: number;
  /** Start time of the owner in clock ticks since boot. */
  ownerStart: number;
  /** Relay process, once started. */
  relayPid?: number;
  /** Start time of the relay in clock ticks since boot. */
  relayStart?: number;
  /** Namespace names. */
  clientNs: string;
  serverNs: string;
  /** Device names. */
  clientIf: string;
  serverIf: string;
  /** Third octet of the 169.254.x.0/30 pair. */
  octet: number;
  /** ISO time the link was opened. */
  createdAt: string;
}

const decoder = new TextDecoder();

/** Runs a command; returns stdout, or throws an Error whose message is its first stderr line. */
export async function run(cmd: string, args: string[]): Promise<string> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  } catch (err) {
    throw new Error(`Cannot run ${cmd}: install iproute2`, { cause: err });
  }
  if (!out.success) {
    const line = decoder.decode(out.stderr).trim().split("\n")[0];
    throw new Error(`${cmd} ${args.join(" ")} failed: ${line || `exit ${out.code}`}`);
  }
  return decoder.decode(out.stdout);
}

/** Like {@link run} but synchronous and never throwing (for exit paths). */
export function runSyncQuiet(cmd: string, args: string[]): boolean {
  try {
    return new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).outputSync().success;
  } catch {
    return false;
  }
}

/** A process's start time (clock ticks since boot), or undefined if it is gone. */
export function processStart(pid: number): number | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // Fields after the command name (which may hold spaces) start at ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z") return undefined; // a zombie is as good as gone
    return Number(fields[19]);
  } catch {
    return undefined;
  }
}

/** True when `pid` runs and is the same process that started at `start`. */
export function sameProcess(pid: number | undefined, start: number | undefined): boolean {
  if (!pid) return false;
  const now = processStart(pid);
  return now !== undefined && (start === undefined || now === start);
}

/** Sends `signal` to `pid`, ignoring a process that is already gone. */
export function killQuiet(pid: number, signal: Deno.Signal = "SIGTERM"): void {
  try {
    Deno.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** Effective capability bits of this process. */
function effectiveCaps(): bigint {
  try {
    const status = Deno.readTextFileSync("/proc/self/status");
    const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(status);
    return m ? BigInt(`0x${m[1]}`) : 0n;
  } catch {
    return 0n;
  }
}

const CAP_NET_ADMIN = 12n;
const CAP_SYS_ADMIN = 21n;

/**
 * Throws `Deno.errors.PermissionDenied` with a one-line message unless this
 * process may create namespaces and devices (root, or CAP_NET_ADMIN plus
 * CAP_SYS_ADMIN).
 */
export function requireNetAdmin(): void {
  const caps = effectiveCaps();
  const has = (bit: bigint) => (caps >> bit) & 1n;
  if (has(CAP_NET_ADMIN) && has(CAP_SYS_ADMIN)) return;
  throw new Deno.errors.PermissionDenied(
    "Emulated links need root (CAP_NET_ADMIN and CAP_SYS_ADMIN): run as root",
  );
}

/** True when this process could create links (see {@link requireNetAdmin}). */
export function hasNetAdmin(): boolean {
  try {
    requireNetAdmin();
    return true;
  } catch {
    return false;
  }
}

/** Network namespaces by name (`ip netns list`). */
export async function listNamespaces(): Promise<string[]> {
  const out = await run("ip", ["netns", "list"]).catch(() => "");
  return out.split("\n").map((l) => l.split(" ")[0]).filter((n) => n !== "");
}

/** Pids of processes inside a namespace (`ip netns pids`). */
export async function namespacePids(ns: string): Promise<number[]> {
  const out = await run("ip", ["netns", "pids", ns]).catch(() => "");
  return out.split(/\s+/).filter((s) => s !== "").map(Number);
}

/** Network devices of the root namespace whose names start with `prefix`. */
export async function listDevices(prefix: string): Promise<string[]> {
  const out = await run("ip", ["-o", "link", "show"]).catch(() => "");
  const names: string[] = [];
  for (const line of out.split("\n")) {
    const m = /^\d+:\s+([^:@\s]+)/.exec(line);
    if (m && m[1].startsWith(prefix)) names.push(m[1]);
  }
  return names;
}

/** Reads every state file in `dir` (skipping unreadable ones). */
export async function readStates(dir: string): Promise<LinkState[]> {
  const states: LinkState[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (!e.isFile || !e.name.endsWith(".json")) continue;
      try {
        states.push(JSON.parse(await Deno.readTextFile(`${dir}/${e.name}`)));
      } catch {
        // half-written or foreign file: cleanup handles its namespaces by prefix
      }
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return states;
}

/** Writes a link's state file atomically. */
export async function writeState(dir: string, state: LinkState): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  const tmp = `${dir}/.${state.id}.json.tmp`;
  await Deno.writeTextFile(tmp, JSON.stringify(state, null, 2) + "\n");
  await Deno.rename(tmp, `${dir}/${state.id}.json`);
}

/** Removes a link's state file; a missing file is fine. */
export function removeStateSync(dir: string, id: string): void {
  try {
    Deno.removeSync(`${dir}/${id}.json`);
  } catch {
    // already gone
  }
}
