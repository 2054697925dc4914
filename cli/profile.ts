/**
 * `lab profile`: where one warm request's time goes, per side. Starts a
 * server (sbilab's `lab serve` under V8's CPU profiler, or a C peer), runs the
 * SBI client in a process of its own under the profiler for a bounded number
 * of requests, and prints one table per side (see `profile/cpu_profile.ts`),
 * the CPU time of both processes, and for an h2c peer h2load's time per
 * request on the same server as the yardstick. With `--callgrind` the
 * client also runs twice under callgrind (a quarter of the requests, then
 * all of them) and the difference gives its instructions per request by
 * object file (see `profile/callgrind.ts`): the figure the machine's noise moves
 * least. With `--memory` neither side runs under a profiler (it distorts
 * memory): the client reads both processes' resident size after the warm-up
 * and every 10k requests, and the table (see `profile/memory_growth.ts`) gives
 * each side's growth against the 5 MiB target; `--json` saves it. Client on
 * CPU 0, server on CPU 1, as `lab bench` places them.
 */
import type { Command } from "commander";
import { UsageError } from "./args.ts";
import type { ProfileClientJob, ProfileClientResult } from "./_profile_client.ts";
import {
  breakdown,
  busySamples,
  type CpuProfile,
  type CpuTime,
  MEMORY_STEP_REQUESTS,
  type MemoryReadings,
  memoryRun,
  parseAnnotate,
  parseCpuProfile,
  perRequestByObject,
  renderBreakdown,
  renderMemoryRun,
  renderObjectCosts,
} from "../profile/mod.ts";
import { enablePlacement, onServerCpu, placement } from "../bench/measure/mod.ts";
import { parseH2loadOutput } from "../bench/scenarios/mod.ts";
import { findTool, freePort, freeUdpPort, ROOT, waitForPort } from "../lib/host.ts";
import { createDevPki, DEV_PKI_FILES, writeDevPki } from "../transports/pki.ts";
import { type TransportName, TRANSPORTS } from "../transports/types.ts";
import { resolveStack } from "../transports/stack.ts";
import { V8_FLAGS_ARG } from "../lib/v8_flags.ts";
import { formatDuration, formatMultiple } from "../lib/units.ts";
import { startLabServe } from "../lib/lab_serve.ts";

/** Servers `lab profile` can load. */
export const PROFILE_SERVERS = ["sbilab", "nghttpd", "gtlsserver"] as const;

interface ProfileFlags {
  transport: string;
  server: string;
  requests?: string;
  warmUp: string;
  streams: string;
  size: string;
  interval: string;
  out?: string;
  callgrind?: boolean;
  memory?: boolean;
  json?: string;
}

function int(text: string, flag: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${flag} must be a whole number ${min}-${max}, got ${text}`);
  }
  return n;
}

/** A server under test: where it listens, the path to GET, how to stop it. */
interface ProfiledServer {
  origin: string;
  path: string;
  pid?: number;
  caPath?: string;
  insecure?: boolean;
  /** Directory its CPU profile lands in (sbilab only). */
  profileDir?: string;
  stop(): Promise<void>;
}

function stopChild(child: Deno.ChildProcess): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () =>
    done ??= (async () => {
      try {
        child.kill("SIGTERM");
      } catch {
        // exited
      }
      const killer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // gone
        }
      }, 10_000);
      await child.status;
      clearTimeout(killer);
    })();
}

/** V8 profiler flags for `deno run`: none when `interval` is undefined (a memory run). */
function profilerFlags(dir: string, interval: number | undefined): string[] {
  return interval === undefined
    ? []
    : ["--cpu-prof", `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${interval}`];
}

async function startSbilab(
  transport: TransportName,
  size: number,
  out: string,
  interval: number | undefined,
): Promise<ProfiledServer> {
  const profileDir = interval === undefined ? undefined : `${out}/server`;
  const stateDir = `${out}/state`;
  // The one way to start lab serve, with the profiler's flags and the server's CPU.
  const server = await startLabServe(
    // h3 read as the benchmarks read it (docs/known-limits.md)
    { transports: [transport], stateDir, h3ExactEcn: false },
    {
      lab: [
        Deno.execPath(),
        "run",
        "-A",
        "--unstable-net",
        V8_FLAGS_ARG,
        ...profilerFlags(`${out}/server`, interval),
        `${ROOT}/main.ts`,
      ],
      cpu: (await placement())?.server,
      timeoutMs: 60_000,
    },
  );
  return {
    origin: server.urls[transport]!,
    path: `/nbench/v1/payload?size=${size}`,
    pid: server.pid,
    caPath: `${stateDir}/ca.pem`,
    profileDir,
    stop: async () => {
      await server.stop();
    },
  };
}

async function startPeer(
  name: "nghttpd" | "gtlsserver",
  size: number,
  out: string,
): Promise<ProfiledServer> {
  const exe = findTool(name);
  if (!exe) {
    const pkg = name === "nghttpd" ? "nghttp2-server" : "ngtcp2-server";
    throw new UsageError(`${name} not found: apt-get install ${pkg}`);
  }
  const docs = `${out}/docs`;
  await Deno.mkdir(docs, { recursive: true });
  await Deno.writeFile(`${docs}/payload`, new Uint8Array(size).fill(0x61));
  let args: string[];
  let port: number;
  if (name === "nghttpd") {
    port = freePort();
    args = ["--no-tls", "-d", docs, String(port)];
  } else {
    port = freeUdpPort();
    await writeDevPki(out, await createDevPki());
    args = [
      "-q",
      "-d",
      docs,
      "127.0.0.1",
      String(port),
      `${out}/${DEV_PKI_FILES.serverKey}`,
      `${out}/${DEV_PKI_FILES.serverCert}`,
    ];
  }
  const [cmd, cmdArgs] = onServerCpu(await placement(), exe, args);
  const child = new Deno.Command(cmd, {
    args: cmdArgs,
    stdout: "null",
    stderr: "null",
    stdin: "null",
  }).spawn();
  const stop = stopChild(child);
  if (name === "nghttpd") {
    try {
      await waitForPort(port, 10_000);
    } catch (err) {
      await stop();
      throw err;
    }
  }
  return {
    origin: name === "nghttpd" ? `http://127.0.0.1:${port}` : `https://127.0.0.1:${port}`,
    path: "/payload",
    pid: child.pid,
    insecure: name === "gtlsserver",
    stop,
  };
}

/** What one run sends, whatever it measures. */
interface RunSettings {
  transport: TransportName;
  requests: number;
  warmup: number;
  streams: number;
  size: number;
}

/** The client process's job against `server`. */
function clientJob(server: ProfiledServer, run: RunSettings): ProfileClientJob {
  return {
    transport: run.transport,
    origin: server.origin,
    path: server.path,
    size: run.size,
    requests: run.requests,
    warmup: run.warmup,
    streams: run.streams,
    caPath: server.caPath,
    insecure: server.insecure,
    serverPid: server.pid,
  };
}

/** The profile of the busiest thread a process wrote in `dir` (a worker that only waits writes one too). */
async function readProfile(dir: string) {
  let best: { profile: CpuProfile; busy: number } | undefined;
  for await (const e of Deno.readDir(dir)) {
    if (!e.name.endsWith(".cpuprofile")) continue;
    const profile = parseCpuProfile(JSON.parse(await Deno.readTextFile(`${dir}/${e.name}`)));
    const busy = busySamples(profile);
    if (!best || busy > best.busy) best = { profile, busy };
  }
  if (!best) throw new Error(`No CPU profile was written in ${dir}`);
  return best.profile;
}

async function runClient(
  job: ProfileClientJob,
  profileDir: string,
  interval: number | undefined,
): Promise<ProfileClientResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-net",
      V8_FLAGS_ARG,
      ...profilerFlags(profileDir, interval),
      `${ROOT}/cli/_profile_client.ts`,
      JSON.stringify(job),
    ],
    stdout: "piped",
    stderr: "inherit",
    stdin: "null",
  }).output();
  const last = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1) ?? "";
  if (!out.success || !last.startsWith("{")) {
    throw new Error(`The profiled client failed (exit ${out.code})`);
  }
  return JSON.parse(last) as ProfileClientResult;
}

/** Instructions of one client run of `job` under callgrind, by object file. */
async function callgrindClient(job: ProfileClientJob, out: string): Promise<Map<string, number>> {
  const file = `${out}/client-${job.requests}.callgrind`;
  const run = await new Deno.Command("valgrind", {
    args: [
      "--tool=callgrind",
      `--callgrind-out-file=${file}`,
      Deno.execPath(),
      "run",
      "-A",
      "--unstable-net",
      `${ROOT}/cli/_profile_client.ts`,
      JSON.stringify(job),
    ],
    stdout: "piped",
    stderr: "null",
    stdin: "null",
  }).output();
  if (!run.success) throw new Error(`The client under callgrind failed (exit ${run.code})`);
  const ann = await new Deno.Command("callgrind_annotate", {
    // --auto=no: the annotated source lines that would follow match as more rows.
    args: ["--threshold=100", "--auto=no", file],
    stdout: "piped",
    stderr: "null",
  }).output();
  if (!ann.success) throw new Error("callgrind_annotate failed");
  return parseAnnotate(new TextDecoder().decode(ann.stdout));
}

/** h2load against `origin` for `requests` at `streams` in flight: µs per request. */
async function h2loadUs(url: string, requests: number, streams: number): Promise<number> {
  const warm = await new Deno.Command("h2load", {
    args: ["-n", String(Math.min(requests, 2000)), "-c", "1", "-m", String(streams), url],
    stdout: "null",
    stderr: "null",
  }).output();
  if (!warm.success) throw new Error("h2load failed");
  const out = await new Deno.Command("h2load", {
    args: ["-n", String(requests), "-c", "1", "-m", String(streams), url],
    stdout: "piped",
    stderr: "null",
  }).output();
  const s = parseH2loadOutput(new TextDecoder().decode(out.stdout));
  return 1e6 / s.reqPerSec;
}

/** Registers `lab profile`. */
export function registerProfileCommand(program: Command): void {
  program.command("profile")
    .description("profile one warm transport: where a request's time goes, per side")
    .option("--transport <name>", `one of ${TRANSPORTS.join(", ")}`, "h2c")
    .option("--server <name>", `${PROFILE_SERVERS.join(", ")} (C peers: h2c / h3 only)`, "sbilab")
    .option("--requests <n>", "requests measured (1-1000000; default 20000, 100000 with --memory)")
    .option("--warm-up <n>", "requests sent first, not measured (0-1000000)", "2000")
    .option("--streams <n>", "requests in flight on the one connection (1-1024)", "1")
    .option("--size <bytes>", "response body size (1-16777216)", "256")
    .option("--interval <µs>", "profiler sampling interval in µs (50-10000)", "100")
    .option("--out <dir>", "keep the profiles here (default: a temporary folder, removed)")
    .option("--callgrind", "also count the client's instructions per request (valgrind)")
    .option(
      "--memory",
      "no profiler: RSS of each side after the warm-up, every 10k requests and at the end",
    )
    .option("--json <file>", "with --memory: save the memory record (sbilab-memory/1) here")
    .action(profile);
}

/**
 * `lab profile`'s options, checked: the transport and server must go
 * together, `--memory` excludes `--callgrind` and goes with `--json`.
 */
function profileSettings(o: ProfileFlags): RunSettings & { interval: number } {
  const transport = o.transport as TransportName;
  if (!(TRANSPORTS as readonly string[]).includes(transport)) {
    throw new UsageError(`--transport must be one of ${TRANSPORTS.join(", ")}`);
  }
  if (!(PROFILE_SERVERS as readonly string[]).includes(o.server)) {
    throw new UsageError(`--server must be one of ${PROFILE_SERVERS.join(", ")}`);
  }
  if (o.server === "nghttpd" && transport !== "h2c") {
    throw new UsageError("--server nghttpd goes with --transport h2c");
  }
  if (o.server === "gtlsserver" && transport !== "h3") {
    throw new UsageError("--server gtlsserver goes with --transport h3");
  }
  if (o.memory && o.callgrind) {
    throw new UsageError("--memory and --callgrind are separate runs: choose one");
  }
  if (o.json && !o.memory) throw new UsageError("--json goes with --memory");
  const requests = int(
    o.requests ?? (o.memory ? "100000" : "20000"),
    "--requests",
    1,
    1_000_000,
  );
  const warmup = int(o.warmUp, "--warm-up", 0, 1_000_000);
  const streams = int(o.streams, "--streams", 1, 1024);
  const size = int(o.size, "--size", 1, 16 * 1024 * 1024);
  const interval = int(o.interval, "--interval", 50, 10_000);
  return { transport, requests, warmup, streams, size, interval };
}

/** `lab profile`: one warm transport profiled on both sides (or its memory, with `--memory`). */
async function profile(o: ProfileFlags): Promise<void> {
  const { interval, ...run } = profileSettings(o);
  const { transport, requests, warmup, streams, size } = run;
  const out = o.out ?? await Deno.makeTempDir({ prefix: "sbilab-profile-" });
  await Deno.mkdir(out, { recursive: true });
  enablePlacement(true);
  const pinned = await placement();
  if (o.memory) {
    await memoryAction(o, { ...run, out, pinned: pinned !== undefined });
    return;
  }
  const server = o.server === "sbilab"
    ? await startSbilab(transport, size, out, interval)
    : await startPeer(o.server as "nghttpd" | "gtlsserver", size, out);
  if (o.callgrind && (!findTool("valgrind") || !findTool("callgrind_annotate"))) {
    throw new UsageError("--callgrind needs valgrind: apt-get install valgrind");
  }
  if (o.callgrind && requests < 4) {
    throw new UsageError("--callgrind needs --requests 4 or more");
  }
  let result: ProfileClientResult;
  let reference: number | undefined;
  let instructions: string | undefined;
  try {
    const job = clientJob(server, run);
    result = await runClient(job, `${out}/client`, interval);
    if (transport === "h2c" && findTool("h2load")) {
      reference = await h2loadUs(`${server.origin}${server.path}`, requests, streams);
    }
    if (o.callgrind) {
      const few = Math.round(requests / 4);
      const slow = { ...job, warmup: Math.min(warmup, 500), serverPid: undefined };
      const small = await callgrindClient({ ...slow, requests: few }, out);
      const large = await callgrindClient(slow, out);
      instructions = renderObjectCosts(
        `client under callgrind (${requests} − ${few} requests)`,
        perRequestByObject(small, few, large, requests),
      );
    }
  } finally {
    await server.stop();
  }
  const wallUs = (result.toUs - result.fromUs) / requests;
  console.log(
    `lab profile: ${transport}, sbilab client → ${o.server}, ${size} B, ${streams} in flight, ` +
      `${requests} requests after ${warmup} warm-up; ${
        pinned ? "client on CPU 0, server on CPU 1" : "not pinned"
      }`,
  );
  console.log(
    `wall time per request: ${formatDuration(wallUs * 1e3)}` +
      (result.errors ? ` (${result.errors} errors)` : "") +
      (reference !== undefined
        ? `; h2load on the same server: ${formatDuration(reference * 1e3)} (sbilab client ${
          formatMultiple(wallUs / reference)
        } h2load's time)`
        : ""),
  );
  const window = { fromUs: result.fromUs, toUs: result.toUs, requests };
  const sides: [string, string | undefined, CpuTime | undefined][] = [
    ["client (sbilab SBI client)", `${out}/client`, result.client],
    [`server (${o.server})`, server.profileDir, result.server],
  ];
  for (const [title, dir, cpu] of sides) {
    console.log("");
    if (dir) {
      console.log(renderBreakdown(title, breakdown(await readProfile(dir), window), cpu));
    } else if (cpu) {
      console.log(
        `${title}: not a V8 process; CPU per request: user ${
          formatDuration(cpu.userUs / requests * 1e3)
        }, system ${formatDuration(cpu.systemUs / requests * 1e3)}`,
      );
    }
  }
  if (instructions) console.log(`\n${instructions}`);
  if (o.out) console.log(`\nprofiles kept in ${out} (open them in Chrome DevTools)`);
  else await Deno.remove(out, { recursive: true });
}

/** `lab profile --memory`: both sides unprofiled, RSS sampled by the client, one table. */
async function memoryAction(
  o: ProfileFlags,
  run: RunSettings & { out: string; pinned: boolean },
): Promise<void> {
  const { transport, requests, warmup, streams, size, out } = run;
  const server = o.server === "sbilab"
    ? await startSbilab(transport, size, out, undefined)
    : await startPeer(o.server as "nghttpd" | "gtlsserver", size, out);
  let result: ProfileClientResult;
  try {
    result = await runClient(
      { ...clientJob(server, run), memoryEvery: MEMORY_STEP_REQUESTS },
      `${out}/client`,
      undefined,
    );
  } finally {
    await server.stop();
  }
  const memory = result.memory;
  if (!memory) throw new Error("The client returned no memory readings");
  const sides: { title: string; readings: MemoryReadings }[] = [
    { title: "client (sbilab SBI client)", readings: memory.client },
  ];
  if (memory.server) sides.push({ title: `server (${o.server})`, readings: memory.server });
  const record = memoryRun({
    transport,
    stack: resolveStack(),
    server: o.server,
    sizeBytes: size,
    streams,
    warmup,
    requests,
    errors: result.errors,
    pinned: run.pinned,
    stepRequests: MEMORY_STEP_REQUESTS,
    sides,
  });
  console.log(renderMemoryRun(record));
  if (o.json) {
    await Deno.writeTextFile(o.json, JSON.stringify(record, null, 2) + "\n");
    console.log(`memory record written to ${o.json}`);
  }
  if (!o.out) await Deno.remove(out, { recursive: true });
}
