import process from "node:process";

/**
 * What the machine did while a run measured: CPU time of the client (this
 * process, getrusage) and of the server process (every thread's run time from
 * `/proc/<pid>/task/<tid>/schedstat`), the whole machine's busy and steal time from `/proc/stat`, and the
 * load average. Linux only; elsewhere every reading is undefined and the run
 * simply records less.
 */

/** One reading of the machine and the measured processes (seconds). */
export interface MachineSnapshot {
  /** Busy CPU time of every CPU (user, nice, system, irq, softirq), s. */
  busyS: number;
  /** Time stolen by the hypervisor across every CPU, s. */
  stealS: number;
  /** Every CPU's time of any kind (idle included), s. */
  totalS: number;
  /** CPU time of the client process (every thread), s. */
  clientS: number;
  /** CPU time of the server process (every thread), s; 0 when it is not known. */
  serverS: number;
  /** One-minute load average. */
  load1: number;
}

/** Reads snapshots; injected into the round runner so tests can script the machine. */
export interface MachineProbe {
  /** A reading now at the start or end of a block, or undefined when the platform has none. */
  snapshot(edge: "start" | "end"): Promise<MachineSnapshot | undefined>;
}

/** `/proc/stat` counts in USER_HZ ticks, which Linux fixes at 100 per second for user space. */
const USER_HZ = 100;

/** Busy, steal and total CPU seconds from the text of `/proc/stat` (its aggregate `cpu` line). */
export function parseProcStat(text: string): { busyS: number; stealS: number; totalS: number } {
  const line = text.split("\n").find((l) => l.startsWith("cpu "));
  if (!line) throw new SyntaxError("/proc/stat has no aggregate cpu line");
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  if (f.length < 8 || f.some((x) => !Number.isFinite(x))) {
    throw new SyntaxError(`Cannot read /proc/stat's cpu line: ${line}`);
  }
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f;
  return {
    busyS: (user + nice + system + irq + softirq) / USER_HZ,
    stealS: steal / USER_HZ,
    totalS: (user + nice + system + idle + iowait + irq + softirq + steal) / USER_HZ,
  };
}

/**
 * CPU time (s) of every thread of a process, or undefined when it cannot be
 * read. Synchronous: procfs answers in microseconds, and a round trip through
 * the runtime's thread pool per file would cost more than the reads.
 */
export function processCpuSeconds(pid: number): number | undefined {
  let ns = 0;
  try {
    for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
      try {
        const text = Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/schedstat`);
        ns += Number(text.split(" ")[0]);
      } catch {
        // the thread ended between the listing and the read
      }
    }
  } catch {
    return undefined;
  }
  return ns / 1e9;
}

/** This process's CPU time (s) from getrusage: a synchronous call of a microsecond. */
function ownCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/**
 * The probe of this machine, with the server's process id when it runs in its
 * own. The client is this process; its CPU time is read at the edge of the
 * snapshot nearest the block (last before, first after), so the probe's own
 * reads are not charged to the block.
 */
export function procMachineProbe(serverPid?: number): MachineProbe {
  return {
    snapshot(edge) {
      const first = edge === "end" ? ownCpuSeconds() : undefined;
      try {
        const stat = Deno.readTextFileSync("/proc/stat");
        const load = Deno.readTextFileSync("/proc/loadavg");
        const server = serverPid === undefined ? 0 : processCpuSeconds(serverPid);
        return Promise.resolve({
          ...parseProcStat(stat),
          clientS: first ?? ownCpuSeconds(),
          serverS: server ?? 0,
          load1: Number(load.split(" ")[0]),
        });
      } catch {
        return Promise.resolve(undefined);
      }
    },
  };
}
