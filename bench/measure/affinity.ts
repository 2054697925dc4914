/**
 * CPU placement for a benchmark run. On this kind of VM a loopback round trip
 * between two processes costs ~10 µs when both sit on one CPU and ~50 µs when
 * they sit on two (the wake-up crosses CPUs), and the scheduler picks either
 * from run to run: unpinned floors came out bimodal. So when the machine has
 * two or more CPUs and `taskset` exists, the measuring side runs on CPU 0 and
 * every peer (server, echo process) on CPU 1, floors and transports alike.
 * `SBILAB_NO_PIN=1` turns this off.
 */

/** Where the two sides of a run are placed, or undefined when unpinned. */
export interface Placement {
  /** CPU of the measuring (client) process. */
  client: number;
  /** CPU of the peer (server, echo) processes. */
  server: number;
}

let cached: Promise<Placement | undefined> | undefined;
let enabled = false;

/**
 * Allows pinning for this process. The runner enables it only when the
 * servers run in their own processes, so a library caller (a test running
 * servers in process) never finds its whole process moved to one CPU.
 */
export function enablePlacement(on: boolean): void {
  enabled = on;
}

async function taskset(args: string[]): Promise<boolean> {
  try {
    const out = await new Deno.Command("taskset", { args, stdout: "null", stderr: "null" })
      .output();
    return out.success;
  } catch {
    return false;
  }
}

/**
 * Decides the placement once per process and pins this process (all its
 * threads) to the client CPU. Resolves undefined when pinning is off or
 * impossible.
 */
export function placement(): Promise<Placement | undefined> {
  if (!enabled && !cached) return Promise.resolve(undefined);
  cached ??= (async () => {
    if (Deno.env.get("SBILAB_NO_PIN") === "1") return undefined;
    if (navigator.hardwareConcurrency < 2) return undefined;
    const p = { client: 0, server: 1 };
    if (!(await taskset(["-a", "-p", "-c", String(p.client), String(Deno.pid)]))) return undefined;
    return p;
  })();
  return cached;
}

/** Prefixes a command so it runs on the peer CPU when pinned. */
export function onServerCpu(
  p: Placement | undefined,
  cmd: string,
  args: string[],
): [string, string[]] {
  return p ? ["taskset", ["-c", String(p.server), cmd, ...args]] : [cmd, args];
}

/** One line describing the placement, for reports. */
export function describePlacement(p: Placement | undefined): string {
  return p
    ? `client pinned to CPU ${p.client}, servers and echo peers to CPU ${p.server}`
    : "processes not pinned to CPUs";
}
