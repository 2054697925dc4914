/**
 * `lab link cleanup`: removes what dead link owners left behind (namespaces,
 * devices, relay and probe processes, state files), or everything with the
 * sbilab prefix when asked.
 *
 * @module
 */
import {
  DEFAULT_STATE_DIR,
  DEV_PREFIX,
  killQuiet,
  listDevices,
  listNamespaces,
  namespacePids,
  NS_PREFIX,
  processStart,
  readStates,
  removeStateSync,
  requireNetAdmin,
  run,
  sameProcess,
} from "./_system.ts";

/** Options for {@link cleanupLinks}. */
export interface CleanupOptions {
  /** Also remove links whose owner still runs. Default false. */
  all?: boolean;
  /** State folder. Default `/run/sbilab/links` (or SBILAB_LINK_STATE_DIR). */
  stateDir?: string;
  /** Only these link ids, and no sweep of other prefixed namespaces, devices
   * or helpers (so concurrent links are never touched). Default: every link. */
  ids?: string[];
}

/** What a cleanup removed, and which live links it left alone. */
export interface CleanupReport {
  /** Namespaces deleted. */
  namespaces: string[];
  /** Root-namespace devices deleted. */
  devices: string[];
  /** Processes killed (relays, probes, anything inside a removed namespace). */
  pids: number[];
  /** Ids of links whose state file was removed. */
  links: string[];
  /** Ids of links kept because their owner still runs. */
  kept: string[];
}

/** Our native helpers, recognised by their program name. */
const HELPERS = ["sbilab-linkrelay", "sbilab-linkprobe"];

/** Pids of running sbilab link helpers (relay, probe). */
async function helperPids(): Promise<number[]> {
  const pids: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const argv0 = (await Deno.readTextFile(`/proc/${e.name}/cmdline`)).split("\0")[0];
      if (HELPERS.includes(argv0.split("/").at(-1) ?? "")) pids.push(Number(e.name));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/**
 * Removes links whose owning process is gone (or every sbilab link with
 * `all`): kills their relay and every process inside their namespaces,
 * deletes the namespaces, stray `sbl-` devices and the state files.
 */
export async function cleanupLinks(options: CleanupOptions = {}): Promise<CleanupReport> {
  requireNetAdmin();
  const stateDir = options.stateDir ?? DEFAULT_STATE_DIR;
  const report: CleanupReport = { namespaces: [], devices: [], pids: [], links: [], kept: [] };
  const keepNs = new Set<string>();
  const keepDev = new Set<string>();
  const keepPids = new Set<number>();
  const kill = (pid: number) => {
    killQuiet(pid, "SIGKILL");
    report.pids.push(pid);
  };
  const removeNs = async (ns: string) => {
    for (const pid of await namespacePids(ns)) kill(pid);
    await run("ip", ["netns", "del", ns]).then(() => report.namespaces.push(ns), () => {});
  };

  for (const s of await readStates(stateDir)) {
    if (options.ids && !options.ids.includes(s.id)) continue;
    if (!options.all && sameProcess(s.ownerPid, s.ownerStart)) {
      report.kept.push(s.id);
      [s.clientNs, s.serverNs].forEach((n) => keepNs.add(n));
      [s.clientIf, s.serverIf].forEach((n) => keepDev.add(n));
      if (s.relayPid) keepPids.add(s.relayPid);
      continue;
    }
    if (s.relayPid && sameProcess(s.relayPid, s.relayStart)) kill(s.relayPid);
    for (const ns of [s.clientNs, s.serverNs]) await removeNs(ns);
    removeStateSync(stateDir, s.id);
    report.links.push(s.id);
  }

  if (options.ids) {
    await waitForExit(report.pids, 3000);
    return report;
  }
  // Anything with our prefix that no live link claims.
  for (const ns of await listNamespaces()) {
    if (ns.startsWith(NS_PREFIX) && !keepNs.has(ns) && !report.namespaces.includes(ns)) {
      await removeNs(ns);
    }
  }
  for (const dev of await listDevices(DEV_PREFIX)) {
    if (keepDev.has(dev)) continue;
    await run("ip", ["link", "del", dev]).then(() => report.devices.push(dev), () => {});
  }
  // Helpers of live links run inside kept namespaces or are their relays.
  const livePids = new Set(keepPids);
  for (const ns of keepNs) for (const pid of await namespacePids(ns)) livePids.add(pid);
  for (const pid of await helperPids()) {
    if (!livePids.has(pid) && !report.pids.includes(pid)) kill(pid);
  }
  await waitForExit(report.pids, 3000);
  return report;
}

/** Waits (bounded) until every pid has exited, so the report holds when returned. */
async function waitForExit(pids: number[], ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (pids.some((pid) => processStart(pid) !== undefined) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
}
