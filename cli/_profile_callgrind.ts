/**
 * `lab profile --callgrind`: both sides of one warm connection under
 * callgrind, twice (a quarter of the requests, then all of them), each run a
 * fresh server and client; the difference of the two runs, divided by the
 * difference in requests, is each side's instructions per request, by object
 * file and by part (see `profile/callgrind.ts`). The client is sbilab's SBI
 * client, h2load or the native load engine in its C driver. Private to
 * `cli/profile.ts`.
 */
import type { ProfileClientJob } from "./_profile_client.ts";
import {
  type CallgrindRun,
  callgrindSide,
  objectRows,
  readCallgrindFile,
  renderObjectCosts,
  renderPartCosts,
} from "../profile/mod.ts";
import { parseH2loadOutput } from "../bench/scenarios/mod.ts";
import { ensureBuilt } from "../lib/native_build.ts";
import { ROOT } from "../lib/host.ts";
import { V8_FLAGS_ARG } from "../lib/v8_flags.ts";

/** Clients `lab profile --callgrind` can run. */
export const CALLGRIND_CLIENTS = ["sbilab", "h2load", "engine"] as const;
/** One of {@linkcode CALLGRIND_CLIENTS}. */
export type CallgrindClient = typeof CALLGRIND_CLIENTS[number];

/** A server started for one counted run; `stop` ends it and waits for it to exit. */
export interface CountedServer {
  origin: string;
  path: string;
  stop(): Promise<void>;
}

/** What a callgrind run needs from `lab profile`. */
export interface CallgrindPlan {
  /** The client's job; `requests` is the larger run's count. */
  job: ProfileClientJob;
  client: CallgrindClient;
  /** The server's name in the tables. */
  server: string;
  stack: string;
  /** Starts the server with `prefix` (valgrind and its flags) before its command line. */
  startServer(prefix: string[]): Promise<CountedServer>;
  /** Folder for the callgrind files. */
  out: string;
}

/** valgrind's command line prefix that writes `file`. */
function valgrind(file: string): string[] {
  return ["valgrind", "--tool=callgrind", `--callgrind-out-file=${file}`];
}

/** Runs `argv`, waits for it and returns its stdout; a failure names `what`. */
async function runToEnd(argv: string[], what: string): Promise<string> {
  const r = await new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdout: "piped",
    stderr: "null",
    stdin: "null",
  }).output();
  if (!r.success) throw new Error(`${what} under callgrind failed (exit ${r.code})`);
  return new TextDecoder().decode(r.stdout);
}

/** Runs the client of `plan` for `job` under callgrind, writing `file`; checks every answer came. */
async function runClient(
  plan: CallgrindPlan,
  job: ProfileClientJob,
  origin: string,
  path: string,
  file: string,
): Promise<void> {
  const url = new URL(path, origin);
  if (plan.client === "sbilab") {
    const text = await runToEnd([
      ...valgrind(file),
      Deno.execPath(),
      "run",
      "-A",
      "--unstable-net",
      V8_FLAGS_ARG,
      `${ROOT}/cli/_profile_client.ts`,
      // a request may wait on a collection in a process slowed 50-fold
      JSON.stringify({ ...job, origin, path, serverPid: undefined, timeoutMs: 600_000 }),
    ], "The SBI client");
    const last = JSON.parse(text.trim().split("\n").at(-1) ?? "{}");
    if (last.errors !== 0) throw new Error(`The SBI client had ${last.errors} failed requests`);
  } else if (plan.client === "h2load") {
    const text = await runToEnd([
      ...valgrind(file),
      "h2load",
      "-n",
      String(job.requests),
      "-c",
      "1",
      "-m",
      String(job.streams),
      url.href,
    ], "h2load");
    const s = parseH2loadOutput(text);
    if (s.succeeded !== job.requests) {
      throw new Error(`h2load: ${s.succeeded} of ${job.requests} requests succeeded`);
    }
  } else {
    const driver = await ensureBuilt("load_check", { quiet: true });
    const kind = { h2c: "h2", "h2-tls": "h2tls", h3: "h3" }[job.transport];
    const text = await runToEnd([
      ...valgrind(file),
      driver,
      kind,
      url.hostname,
      url.port,
      path,
      String(job.requests),
      "1",
      String(job.streams),
    ], "The native load engine");
    const m = /completed (\d+) errors (\d+) status200 (\d+)/.exec(text);
    if (!m || Number(m[3]) !== job.requests) {
      throw new Error(`The native load engine: ${text.trim() || "no summary"}`);
    }
  }
}

/** Both counted runs of `plan`: the record of instructions per request of each side. */
export async function runCallgrind(plan: CallgrindPlan): Promise<CallgrindRun> {
  const counts: [number, number] = [Math.round(plan.job.requests / 4), plan.job.requests];
  const client: Map<string, number>[] = [];
  const server: Map<string, number>[] = [];
  for (const requests of counts) {
    const files = [
      `${plan.out}/client-${requests}.callgrind`,
      `${plan.out}/server-${requests}.callgrind`,
    ];
    const s = await plan.startServer(valgrind(files[1]));
    try {
      await runClient(plan, { ...plan.job, requests }, s.origin, s.path, files[0]);
    } finally {
      await s.stop();
    }
    client.push(await readCallgrindFile(files[0]));
    server.push(await readCallgrindFile(files[1]));
  }
  return {
    schema: "sbilab-callgrind/1",
    transport: plan.job.transport,
    stack: plan.stack,
    sizeBytes: plan.job.size,
    streams: plan.job.streams,
    warmup: plan.client === "sbilab" ? plan.job.warmup : 0,
    requests: counts,
    sides: [
      callgrindSide("client", plan.client, [client[0], client[1]], counts),
      callgrindSide("server", plan.server, [server[0], server[1]], counts),
    ],
  };
}

/** The record as text: per side, the objects' table, then the parts'. */
export function renderCallgrindRun(run: CallgrindRun): string {
  const [few, all] = run.requests;
  return run.sides.map((s) => {
    const per = new Map(Object.entries(s.perObject));
    return [
      renderObjectCosts(
        `${s.side} (${s.name}) under callgrind (${all} − ${few} requests)`,
        objectRows(per),
      ),
      "",
      renderPartCosts(per),
    ].join("\n");
  }).join("\n\n");
}
