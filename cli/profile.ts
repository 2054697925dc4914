/**
 * `lab profile`: where one warm request's time goes, per side. Starts a
 * server (sbilab's `lab serve` under V8's CPU profiler, or a C peer), runs the
 * SBI client in a process of its own under the profiler for a bounded number
 * of requests, and prints one table per side (see `profile/cpu_profile.ts`),
 * the CPU time of both processes, and for an h2c peer h2load's time per
 * request on the same server as the yardstick. With `--callgrind` neither
 * side runs under V8's profiler: both run twice under callgrind (a quarter of
 * the requests, then all of them; see `cli/_profile_callgrind.ts`) and the
 * difference gives each side's instructions per request by object file and
 * by part: the figure the machine's noise moves least; `--client h2load` or
 * `engine` puts a C client in the SBI client's place. With `--memory`
 * neither side runs under a profiler (it distorts
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
  parseCpuProfile,
  renderBreakdown,
  renderMemoryRun,
} from "../profile/mod.ts";
import {
  CALLGRIND_CLIENTS,
  type CallgrindClient,
  renderCallgrindRun,
  runCallgrind,
} from "./_profile_callgrind.ts";
import { type CallgrindRun, renderCallgrindSummary } from "../profile/mod.ts";
import { enablePlacement, onServerCpu, placement } from "../bench/measure/mod.ts";
import { parseH2loadOutput } from "../bench/scenarios/mod.ts";
import { findTool, freePort, freeUdpPort, ROOT, waitForPort, waitForUdpPort } from "../lib/host.ts";
import { createDevPki, DEV_PKI_FILES, writeDevPki } from "../transports/pki.ts";
import { type TransportName, TRANSPORTS } from "../transports/types.ts";
import { resolveStack } from "../transports/stack.ts";
import { ensureBuilt } from "../lib/native_build.ts";
import { V8_FLAGS_ARG } from "../lib/v8_flags.ts";
import { formatDuration, formatMultiple } from "../lib/units.ts";
import { startLabServe } from "../lib/lab_serve.ts";

/** Servers `lab profile` can load. */
export const PROFILE_SERVERS = ["sbilab", "nghttpd", "gtlsserver", "c-host"] as const;

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
  client: string;
  repeat: string;
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
  /** sbilab serving several transports: each one's origin. */
  origins?: Partial<Record<TransportName, string>>;
  path: string;
  pid?: number;
  caPath?: string;
  insecure?: boolean;
  /** Directory its CPU profile lands in (sbilab only). */
  profileDir?: string;
  stop(): Promise<void>;
}

function stopChild(child: Deno.ChildProcess, killAfterMs = 10_000): () => Promise<void> {
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
      }, killAfterMs);
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
  transports: TransportName[],
  size: number,
  out: string,
  interval: number | undefined,
  prefix: string[] = [],
): Promise<ProfiledServer> {
  const profileDir = interval === undefined ? undefined : `${out}/server`;
  const stateDir = `${out}/state`;
  // under callgrind, lab serve finds its PKI made (at full speed) rather than making it
  if (prefix.length) await writeDevPki(stateDir, await createDevPki());
  // The one way to start lab serve, with the profiler's flags and the server's CPU.
  const server = await startLabServe(
    // h3 read as the benchmarks read it (docs/known-limits.md)
    {
      transports,
      stateDir,
      h3ExactEcn: false,
      // under callgrind a handshake, or a pause while callgrind_control dumps, takes minutes
      limits: prefix.length ? { idleTimeoutMs: 3_600_000, handshakeTimeoutMs: 3_600_000 } : {},
    },
    {
      lab: [
        ...prefix,
        Deno.execPath(),
        "run",
        "-A",
        "--unstable-net",
        V8_FLAGS_ARG,
        ...profilerFlags(`${out}/server`, interval),
        `${ROOT}/main.ts`,
      ],
      cpu: (await placement())?.server,
      // under callgrind: a slow start, and a slow exit that writes the counts
      timeoutMs: prefix.length ? 3_600_000 : 60_000,
      killAfterMs: prefix.length ? 600_000 : undefined,
    },
  );
  return {
    origin: server.urls[transports[0]]!,
    origins: server.urls,
    path: `/nbench/v1/payload?size=${size}`,
    pid: server.pid,
    caPath: `${stateDir}/ca.pem`,
    profileDir,
    stop: async () => {
      await server.stop();
    },
  };
}

/** The C servers `lab profile` can load instead of sbilab's. */
type PeerName = "nghttpd" | "gtlsserver" | "c-host";

/** A C peer's executable: on the PATH, or (`c-host`) built from bench/native/. */
async function peerExe(name: PeerName, transport: TransportName): Promise<string> {
  if (name === "c-host") {
    return await ensureBuilt(transport === "h3" ? "h3host" : "h2host", { quiet: true });
  }
  const exe = findTool(name);
  if (!exe) {
    const pkg = name === "nghttpd" ? "nghttp2-server" : "ngtcp2-server";
    throw new UsageError(`${name} not found: apt-get install ${pkg}`);
  }
  return exe;
}

/**
 * Starts a C peer for `transport`: nghttpd (h2c, or h2 over TLS), gtlsserver
 * (h3) or `c-host`, sbilab's own module hosted by a plain C loop
 * (bench/native/h2host.c, h3host.c); with `prefix` (valgrind) before its
 * command line.
 */
async function startPeer(
  name: PeerName,
  transport: TransportName,
  size: number,
  out: string,
  prefix: string[] = [],
): Promise<ProfiledServer> {
  const exe = await peerExe(name, transport);
  const docs = `${out}/docs`;
  await Deno.mkdir(docs, { recursive: true });
  await Deno.writeFile(`${docs}/payload`, new Uint8Array(size).fill(0x61));
  const tls = transport !== "h2c", udp = transport === "h3";
  if (tls) await writeDevPki(out, await createDevPki());
  const key = `${out}/${DEV_PKI_FILES.serverKey}`, cert = `${out}/${DEV_PKI_FILES.serverCert}`;
  const port = udp ? freeUdpPort() : freePort();
  let args: string[];
  if (name === "nghttpd") {
    args = tls ? ["-d", docs, String(port), key, cert] : ["--no-tls", "-d", docs, String(port)];
  } else if (name === "gtlsserver") {
    args = ["-q", "-d", docs, "127.0.0.1", String(port), key, cert];
  } else {
    args = udp
      ? [cert, key, String(port), String(size)]
      : [String(port), String(size), ...(tls ? [cert, key] : [])];
  }
  const [cmd, cmdArgs] = onServerCpu(
    await placement(),
    prefix[0] ?? exe,
    prefix.length ? [...prefix.slice(1), exe, ...args] : args,
  );
  const child = new Deno.Command(cmd, {
    args: cmdArgs,
    stdout: "null",
    stderr: "null",
    stdin: "null",
  }).spawn();
  // under callgrind: a slow start, and a slow exit that writes the counts
  const slow = prefix.length > 0;
  const stop = stopChild(child, slow ? 600_000 : 10_000);
  try {
    if (!udp) await waitForPort(port, slow ? 600_000 : 10_000);
    // the first request's Initial, sent before the server binds, would wait for its retransmission
    else await waitForUdpPort(port, slow ? 600_000 : 10_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    origin: `${tls ? "https" : "http"}://127.0.0.1:${port}`,
    path: "/payload",
    pid: child.pid,
    insecure: tls,
    stop,
  };
}

/** What one run sends, whatever it measures. */
interface RunSettings {
  transport: TransportName;
  /** With `--callgrind`: every transport counted (sbilab serves them all at once). */
  transports?: TransportName[];
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
    .option(
      "--transport <name>",
      `one of ${TRANSPORTS.join(", ")} (with --callgrind, a list: h2c,h2-tls,h3)`,
      "h2c",
    )
    .option(
      "--server <name>",
      `${
        PROFILE_SERVERS.join(", ")
      } (nghttpd: h2c / h2-tls; gtlsserver: h3; c-host: sbilab's module in a C loop)`,
      "sbilab",
    )
    .option("--requests <n>", "requests measured (1-1000000; default 20000, 100000 with --memory)")
    .option("--warm-up <n>", "requests sent first, not measured (0-1000000)", "2000")
    .option("--streams <n>", "requests in flight on the one connection (1-1024)", "1")
    .option("--size <bytes>", "response body size (1-16777216)", "256")
    .option("--interval <µs>", "profiler sampling interval in µs (50-10000)", "100")
    .option("--out <dir>", "keep the profiles here (default: a temporary folder, removed)")
    .option(
      "--callgrind",
      "no profiler: count each side's instructions per request under callgrind (valgrind)",
    )
    .option("--repeat <n>", "with --callgrind: count every transport this many times (1-100)", "1")
    .option(
      "--client <name>",
      `with --callgrind: ${CALLGRIND_CLIENTS.join(", ")} (h2load: h2c / h2-tls)`,
      "sbilab",
    )
    .option(
      "--memory",
      "no profiler: RSS of each side after the warm-up, every 10k requests and at the end",
    )
    .option(
      "--json <file>",
      "with --memory or --callgrind: save the record (sbilab-memory/1, sbilab-callgrind/1) here",
    )
    .action(profile);
}

/**
 * `lab profile`'s options, checked: the transport and server must go
 * together, `--memory` excludes `--callgrind` and goes with `--json`.
 */
function profileSettings(o: ProfileFlags): RunSettings & { interval: number; repeat: number } {
  const transports = o.transport.split(",") as TransportName[];
  const transport = transports[0];
  for (const t of transports) {
    if (!(TRANSPORTS as readonly string[]).includes(t)) {
      throw new UsageError(`--transport must be one of ${TRANSPORTS.join(", ")}`);
    }
  }
  if (transports.length > 1 && !(o.callgrind && o.server === "sbilab" && o.client === "sbilab")) {
    throw new UsageError(
      "--transport takes a list only with --callgrind, sbilab's server and client",
    );
  }
  const repeat = int(o.repeat, "--repeat", 1, 100);
  if (repeat > 1 && !o.callgrind) throw new UsageError("--repeat goes with --callgrind");
  if (!(PROFILE_SERVERS as readonly string[]).includes(o.server)) {
    throw new UsageError(`--server must be one of ${PROFILE_SERVERS.join(", ")}`);
  }
  if (o.server !== "sbilab" && transports.length > 1) {
    throw new UsageError("a C server serves one transport: give --transport one name");
  }
  if (o.server === "nghttpd" && transport === "h3") {
    throw new UsageError("--server nghttpd goes with --transport h2c or h2-tls");
  }
  if (o.server === "gtlsserver" && transport !== "h3") {
    throw new UsageError("--server gtlsserver goes with --transport h3");
  }
  if (o.memory && o.callgrind) {
    throw new UsageError("--memory and --callgrind are separate runs: choose one");
  }
  if (o.json && !o.memory && !o.callgrind) {
    throw new UsageError("--json goes with --memory or --callgrind");
  }
  if (!(CALLGRIND_CLIENTS as readonly string[]).includes(o.client)) {
    throw new UsageError(`--client must be one of ${CALLGRIND_CLIENTS.join(", ")}`);
  }
  if (o.client !== "sbilab" && !o.callgrind) {
    throw new UsageError(`--client ${o.client} goes with --callgrind`);
  }
  if (o.client === "h2load" && transport === "h3") {
    throw new UsageError("--client h2load goes with --transport h2c or h2-tls");
  }
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
  return { transport, transports, requests, warmup, streams, size, interval, repeat };
}

/** `lab profile`: one warm transport profiled on both sides (or its memory, with `--memory`). */
async function profile(o: ProfileFlags): Promise<void> {
  const { interval, repeat, ...run } = profileSettings(o);
  const { transport, requests, warmup, streams, size } = run;
  const out = o.out ?? await Deno.makeTempDir({ prefix: "sbilab-profile-" });
  await Deno.mkdir(out, { recursive: true });
  if (o.callgrind) {
    // not pinned: instruction counts do not depend on the CPU, and two processes under
    // callgrind on one CPU would share it
    await callgrindAction(o, { ...run, out, repeat });
    return;
  }
  enablePlacement(true);
  const pinned = await placement();
  if (o.memory) {
    await memoryAction(o, { ...run, out, pinned: pinned !== undefined });
    return;
  }
  const server = await startServer(o, run, out, interval);
  let result: ProfileClientResult;
  let reference: number | undefined;
  try {
    const job = clientJob(server, run);
    result = await runClient(job, `${out}/client`, interval);
    if (transport === "h2c" && findTool("h2load")) {
      reference = await h2loadUs(`${server.origin}${server.path}`, requests, streams);
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
  if (o.out) console.log(`\nprofiles kept in ${out} (open them in Chrome DevTools)`);
  else await Deno.remove(out, { recursive: true });
}

/** The server `o` names for `run`, with `prefix` (valgrind) before its command line. */
function startServer(
  o: ProfileFlags,
  run: RunSettings,
  out: string,
  interval: number | undefined,
  prefix: string[] = [],
): Promise<ProfiledServer> {
  return o.server === "sbilab"
    ? startSbilab(run.transports ?? [run.transport], run.size, out, interval, prefix)
    : startPeer(o.server as PeerName, run.transport, run.size, out, prefix);
}

/**
 * `lab profile --callgrind`: both sides counted for every transport, `repeat`
 * times, one table per side and run, then the parts' medians and ranges (and
 * `--json`).
 */
async function callgrindAction(
  o: ProfileFlags,
  run: RunSettings & { out: string; repeat: number },
): Promise<void> {
  if (!findTool("valgrind") || !findTool("callgrind_control")) {
    throw new UsageError("--callgrind needs valgrind: apt-get install valgrind");
  }
  if (o.client === "h2load" && !findTool("h2load")) {
    throw new UsageError("h2load not found: apt-get install nghttp2-client");
  }
  if (run.requests < 4) throw new UsageError("--callgrind needs --requests 4 or more");
  const { transport, requests, warmup, streams, size, out, repeat } = run;
  const transports = run.transports ?? [transport];
  console.log(
    `lab profile --callgrind: ${transports.join(", ")}, ${o.client} client → ${o.server}, ` +
      `${size} B, ${streams} in flight, ${requests} − ${Math.round(requests / 4)} requests` +
      (o.client === "sbilab" ? ` after ${warmup} warm-up` : "") +
      `, ${repeat} run${repeat > 1 ? "s" : ""} each; instructions per request of each process, ` +
      "all threads, user space",
  );
  try {
    const done: CallgrindRun[] = [];
    const records = await runCallgrind({
      job: { transport, origin: "", path: "", size, requests, warmup, streams, insecure: true },
      transports,
      repeat,
      client: o.client as CallgrindClient,
      server: o.server,
      stack: resolveStack(),
      out,
      startServer: async (prefix) => {
        const s = await startServer(o, run, out, undefined, prefix);
        return {
          origins: s.origins ?? { [transport]: s.origin },
          path: s.path,
          pid: s.pid!,
          stop: s.stop,
        };
      },
      onRun: async (record) => {
        console.log(`\n${renderCallgrindRun(record)}`);
        done.push(record);
        // every record saved as soon as it is counted: a long run stopped early keeps them
        if (o.json) await Deno.writeTextFile(o.json, JSON.stringify(done, null, 2) + "\n");
      },
    });
    if (records.length > 1) console.log(`\n${renderCallgrindSummary(records)}`);
    if (o.json) {
      await Deno.writeTextFile(o.json, JSON.stringify(records, null, 2) + "\n");
      console.log(`\ncallgrind records written to ${o.json}`);
    }
  } finally {
    // the files stay only where --out asked for them, also when a count failed
    if (!o.out) await Deno.remove(out, { recursive: true }).catch(() => {});
  }
  if (o.out) console.log(`callgrind files kept in ${out}`);
}

/** `lab profile --memory`: both sides unprofiled, RSS sampled by the client, one table. */
async function memoryAction(
  o: ProfileFlags,
  run: RunSettings & { out: string; pinned: boolean },
): Promise<void> {
  const { transport, requests, warmup, streams, size, out } = run;
  const server = await startServer(o, run, out, undefined);
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
