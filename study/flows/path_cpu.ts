/**
 * CPU of the processes on a flow's path (client, server, link relay) while
 * one transport's blocks run. A process saturates when one of its threads
 * runs all the time: a JavaScript event loop or a relay's forwarding loop is
 * one thread, so the busiest thread's share of one core is the figure, and
 * a process whose five threads each ran a fifth of the time is not saturated.
 * Per-thread run time comes from `/proc/<pid>/task/<tid>/schedstat` (Linux).
 */
import { LINK_RELAY_PID_ENV, LINK_SERVER_PID_ENV } from "../../bench/run/mod.ts";
import { parseProcStat } from "../../bench/measure/mod.ts";

/** Run time (s) of each thread of each watched process at one instant. */
export interface PathReading {
  /** Clock reading (ms). */
  atMs: number;
  /** Process name (`client`, `server`, `relay`) → thread id → run time (s). */
  threads: Record<string, Record<string, number>>;
  /** Busy time of every CPU of the machine (s), when known. */
  machineBusyS?: number;
}

/** Reads the path's processes; injected so tests can script a saturated one. */
export interface PathProbe {
  read(): PathReading;
}

/** Run time (s) of every thread of `pid`, or undefined when it cannot be read. */
export function threadSeconds(pid: number): Record<string, number> | undefined {
  const out: Record<string, number> = {};
  try {
    for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
      try {
        const text = Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/schedstat`);
        out[t.name] = Number(text.split(" ")[0]) / 1e9;
      } catch {
        // the thread ended between the listing and the read
      }
    }
  } catch {
    return undefined;
  }
  return out;
}

/** The processes to watch: this one, and the server and relay when their pids are known. */
export function pathPids(serverPid?: number): Record<string, number> {
  const pids: Record<string, number> = { client: Deno.pid };
  const fromEnv = (name: string) => {
    const n = Number(Deno.env.get(name));
    return Number.isInteger(n) && n > 1 ? n : undefined;
  };
  const server = serverPid ?? fromEnv(LINK_SERVER_PID_ENV);
  if (server !== undefined) pids.server = server;
  const relay = fromEnv(LINK_RELAY_PID_ENV);
  if (relay !== undefined) pids.relay = relay;
  return pids;
}

/** The probe of this machine for the given processes (a process that cannot be read is left out). */
export function procPathProbe(
  pids: Record<string, number>,
  clock: () => number = () => performance.now(),
): PathProbe {
  return {
    read() {
      const threads: PathReading["threads"] = {};
      for (const [name, pid] of Object.entries(pids)) {
        const t = threadSeconds(pid);
        if (t) threads[name] = t;
      }
      let machineBusyS: number | undefined;
      try {
        machineBusyS = parseProcStat(Deno.readTextFileSync("/proc/stat")).busyS;
      } catch {
        // not Linux: no machine figure
      }
      return { atMs: clock(), threads, ...(machineBusyS !== undefined ? { machineBusyS } : {}) };
    },
  };
}

/** Sums per-thread run time over many blocks, and the blocks' wall time. */
export class PathCpu {
  #wallMs = 0;
  #threads = new Map<string, Map<string, number>>();
  #machineS = 0;
  #processS = 0;
  #machineKnown = true;
  #perProcessS = new Map<string, number>();

  /** Adds the block between two readings. */
  add(start: PathReading, end: PathReading): void {
    this.#wallMs += Math.max(0, end.atMs - start.atMs);
    if (start.machineBusyS !== undefined && end.machineBusyS !== undefined) {
      this.#machineS += end.machineBusyS - start.machineBusyS;
    } else this.#machineKnown = false;
    for (const [name, after] of Object.entries(end.threads)) {
      const before = start.threads[name];
      if (!before) continue;
      let m = this.#threads.get(name);
      if (!m) this.#threads.set(name, m = new Map());
      for (const [tid, s] of Object.entries(after)) {
        const d = s - (before[tid] ?? s);
        if (d > 0) {
          m.set(tid, (m.get(tid) ?? 0) + d);
          this.#processS += d;
          this.#perProcessS.set(name, (this.#perProcessS.get(name) ?? 0) + d);
        }
      }
    }
  }

  /** Run time of every thread of each process over the blocks (s): what its work cost. */
  seconds(): Record<string, number> {
    return Object.fromEntries(this.#perProcessS);
  }

  /**
   * Busiest thread's run time ÷ wall time, per process (only processes read
   * at both ends), and `others`: cores the machine was busy outside them.
   */
  shares(): Record<string, number> {
    const out: Record<string, number> = {};
    if (!(this.#wallMs > 0)) return out;
    const wallS = this.#wallMs / 1000;
    for (const [name, m] of this.#threads) out[name] = Math.max(0, ...m.values()) / wallS;
    if (this.#machineKnown && this.#machineS > 0) {
      // /proc/stat counts in 10 ms ticks: clamp the rounding below zero away.
      out.others = Math.max(0, this.#machineS - this.#processS) / wallS;
    }
    return out;
  }
}
