/**
 * The client side of `lab profile`, in a process of its own so V8's profiler
 * (`--cpu-prof`) sees only it: warms one client up, then sends a bounded
 * number of requests with a fixed number in flight, and prints one JSON line
 * with the measured window (on the profiles' monotonic clock) and the CPU
 * time of both processes over it. With `memoryEvery` it also reads the
 * resident size of both processes from `/proc/<pid>/status` right after the
 * warm-up and after every `memoryEvery` measured requests: this process is the
 * one sending, so it reads itself, not a wrapper. Private to `cli/profile.ts`.
 */
import { createClient } from "../transports/mod.ts";
import type { TransportName } from "../transports/types.ts";
import { monotonicUs } from "../lib/libc.ts";
import { readProcMemory } from "../lib/proc_status.ts";
import type { MemoryReadings } from "../profile/mod.ts";
import process from "node:process";

/** What `lab profile` asks of this process (one JSON argument). */
export interface ProfileClientJob {
  transport: TransportName;
  origin: string;
  path: string;
  /** Expected body length; a different one counts as an error. */
  size: number;
  requests: number;
  warmup: number;
  streams: number;
  /** CA file to trust (h2-tls, h3), or undefined. */
  caPath?: string;
  insecure?: boolean;
  /** Server process whose CPU time (and memory) to read, if any. */
  serverPid?: number;
  /** Read both processes' resident size every this many measured requests; default never. */
  memoryEvery?: number;
  /** A request's time limit in ms; default 10 000. */
  timeoutMs?: number;
  /**
   * Instead of `requests`: after the warm-up, one batch of requests per entry,
   * each after printing `paused` and reading one line from stdin, and one more
   * pause after the last (so that callgrind's counters can be reset and read
   * between them); default none.
   */
  steps?: number[];
}

/** The JSON line this process prints. */
export interface ProfileClientResult {
  fromUs: number;
  toUs: number;
  requests: number;
  errors: number;
  client: { userUs: number; systemUs: number };
  server?: { userUs: number; systemUs: number };
  /** With `memoryEvery`: what was read of each process. */
  memory?: { client: MemoryReadings; server?: MemoryReadings };
}

const TICK_US = 1e6 / 100; // USER_HZ on Linux

/** utime and stime of every thread of `pid`, µs (10 ms resolution). */
async function processCpu(pid: number): Promise<{ userUs: number; systemUs: number }> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { userUs: Number(f[11]) * TICK_US, systemUs: Number(f[12]) * TICK_US };
}

/** Reads `pid`'s memory now and on every `take`; throws when the process cannot be read. */
function memoryReader(pid: number | "self") {
  const read = () => {
    const m = readProcMemory(pid);
    if (!m) throw new Error(`Cannot read the memory of process ${pid} from /proc/${pid}/status`);
    return m;
  };
  const first = read();
  const readings: MemoryReadings = {
    pid: pid === "self" ? Deno.pid : pid,
    process: first.name,
    samples: [{ requests: 0, rssBytes: first.rssBytes }],
    peakBytes: first.peakBytes,
  };
  return {
    readings,
    take(requests: number) {
      const m = read();
      readings.samples.push({ requests, rssBytes: m.rssBytes });
      readings.peakBytes = m.peakBytes;
    },
  };
}

async function run(job: ProfileClientJob): Promise<ProfileClientResult> {
  const client = await createClient(job.transport, job.origin, {
    tls: job.transport === "h2c"
      ? undefined
      : { ca: job.caPath ? { path: job.caPath } : undefined, insecure: job.insecure },
    timeoutMs: job.timeoutMs ?? 10_000,
    // h3: a connection paused longer than QUIC's idle timeout (30 s) would close
    ...(job.timeoutMs ? { idleTimeoutMs: job.timeoutMs } : {}),
  });
  let errors = 0;
  const batch = async (n: number) => {
    let left = n;
    const lane = async () => {
      while (left > 0) {
        left--;
        try {
          const r = await client.request({ path: job.path });
          if (r.status !== 200 || r.body.length !== job.size) errors++;
        } catch {
          errors++;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(job.streams, n) }, lane));
  };
  try {
    await batch(job.warmup);
    if (job.steps) return await stepped(job.steps, batch, () => errors);
    errors = 0;
    const c0 = process.cpuUsage();
    const s0 = job.serverPid ? await processCpu(job.serverPid) : undefined;
    const every = job.memoryEvery;
    const memory = every
      ? {
        client: memoryReader("self"),
        server: job.serverPid ? memoryReader(job.serverPid) : undefined,
      }
      : undefined;
    const fromUs = monotonicUs();
    if (memory && every) {
      for (let done = 0; done < job.requests;) {
        const n = Math.min(every, job.requests - done);
        await batch(n);
        done += n;
        memory.client.take(done);
        memory.server?.take(done);
      }
    } else {
      await batch(job.requests);
    }
    const toUs = monotonicUs();
    const c1 = process.cpuUsage(c0);
    const s1 = job.serverPid ? await processCpu(job.serverPid) : undefined;
    return {
      fromUs,
      toUs,
      requests: job.requests,
      errors,
      client: { userUs: c1.user, systemUs: c1.system },
      server: s0 && s1
        ? { userUs: s1.userUs - s0.userUs, systemUs: s1.systemUs - s0.systemUs }
        : undefined,
      memory: memory && {
        client: memory.client.readings,
        server: memory.server?.readings,
      },
    };
  } finally {
    await client.close();
  }
}

/** Runs `steps` batches, each after a `paused` line and a line read from stdin, and pauses once more. */
async function stepped(
  steps: number[],
  batch: (n: number) => Promise<void>,
  errors: () => number,
): Promise<ProfileClientResult> {
  const lines = Deno.stdin.readable.pipeThrough(new TextDecoderStream()).getReader();
  const before = errors();
  let requests = 0;
  const pause = async () => {
    console.log("paused");
    let text = "";
    while (!text.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error("stdin closed before the next step");
      text += value;
    }
  };
  for (const n of steps) {
    await pause();
    await batch(n);
    requests += n;
  }
  await pause();
  lines.releaseLock();
  return {
    fromUs: 0,
    toUs: 0,
    requests,
    errors: errors() - before,
    client: { userUs: 0, systemUs: 0 },
  };
}

if (import.meta.main) {
  const result = await run(JSON.parse(Deno.args[0]) as ProfileClientJob);
  console.log(JSON.stringify(result));
}
