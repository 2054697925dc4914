/**
 * `lab profile --callgrind`: both sides of one warm connection under
 * callgrind, counted for a quarter of the requests and for all of them; the
 * difference of the two counts, divided by the difference in requests, is
 * each side's instructions per request, by object file and by part (see
 * `profile/callgrind.ts`). The SBI client sends both batches on one
 * connection after its warm-up and both processes' counters are read between
 * them (`callgrind_control`); a C client (h2load, or the native load engine in
 * its C driver) runs twice, each time with a fresh server. Private to
 * `cli/profile.ts`.
 */
import type { ProfileClientJob } from "./_profile_client.ts";
import type { TransportName } from "../transports/types.ts";
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

/** A server started for counted runs; `stop` ends it and waits for it to exit. */
export interface CountedServer {
  /** Origin of each transport it serves. */
  origins: Partial<Record<TransportName, string>>;
  path: string;
  /** The server's process id (valgrind's, which runs it). */
  pid: number;
  stop(): Promise<void>;
}

/** What a callgrind run needs from `lab profile`. */
export interface CallgrindPlan {
  /** The client's job; `requests` is the larger run's count. */
  job: ProfileClientJob;
  /** Transports counted, in order (more than one: the SBI client and sbilab's server only). */
  transports: TransportName[];
  /** Counts of every transport. */
  repeat: number;
  /** Called (and awaited) with each run's record as soon as it is counted. Default: nothing. */
  onRun?: (record: CallgrindRun) => void | Promise<void>;
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

/** Runs the C client of `plan` for `job` under callgrind, writing `file`; checks every answer came. */
async function runClient(
  plan: CallgrindPlan,
  job: ProfileClientJob,
  origin: string,
  path: string,
  file: string,
): Promise<void> {
  const url = new URL(path, origin);
  if (plan.client === "h2load") {
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

/** `callgrind_control -z` (zero the counters) or `-d` (dump and zero them) on process `pid`. */
async function control(what: "-z" | "-d", pid: number): Promise<void> {
  const r = await new Deno.Command("callgrind_control", {
    args: [what, String(pid)],
    stdout: "null",
    stderr: "null",
  }).output();
  if (!r.success) throw new Error(`callgrind_control ${what} ${pid} failed (exit ${r.code})`);
}

/**
 * One SBI client's counts against a server running under callgrind (writing
 * `serverFile`, whose dumps so far number `dumps`): the client, under
 * callgrind too, warms up, then sends `counts[0]` and `counts[1]` requests on
 * its connection, pausing before, between and after them. Both processes'
 * counters are zeroed at the first pause and dumped at the other two, so
 * start-up, warm-up and shut-down are never counted; the difference of the
 * two dumps leaves one request's instructions times the difference in
 * requests.
 */
async function steppedRun(
  plan: CallgrindPlan,
  s: CountedServer,
  serverFile: string,
  dumps: number,
  transport: TransportName,
  counts: [number, number],
): Promise<{ client: Map<string, number>[]; server: Map<string, number>[] }> {
  const files = [`${plan.out}/client-${transport}-${dumps / 2 + 1}.callgrind`, serverFile];
  const job = {
    ...plan.job,
    transport,
    origin: s.origins[transport]!,
    path: s.path,
    serverPid: undefined,
    steps: counts,
    // a request may wait on a collection in a process slowed 50-fold
    timeoutMs: 600_000,
  };
  const argv = [
    ...valgrind(files[0]),
    Deno.execPath(),
    "run",
    "-A",
    "--unstable-net",
    V8_FLAGS_ARG,
    `${ROOT}/cli/_profile_client.ts`,
    JSON.stringify(job),
  ];
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stdin = child.stdin.getWriter();
  let text = "";
  const nextLine = async (): Promise<string> => {
    while (!text.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error("The SBI client under callgrind ended early");
      text += value;
    }
    const line = text.slice(0, text.indexOf("\n"));
    text = text.slice(text.indexOf("\n") + 1);
    return line;
  };
  let status: Deno.CommandStatus;
  try {
    for (let pause = 0; pause <= counts.length; pause++) {
      if ((await nextLine()) !== "paused") throw new Error("The SBI client did not pause");
      for (const pid of [child.pid, s.pid]) await control(pause === 0 ? "-z" : "-d", pid);
      await stdin.write(new TextEncoder().encode("go\n"));
    }
    const result = JSON.parse(await nextLine());
    if (result.errors !== 0) {
      throw new Error(`The SBI client had ${result.errors} failed requests`);
    }
  } finally {
    // closing stdin ends a client still waiting at a pause
    await stdin.close().catch(() => {});
    lines.releaseLock();
    await child.stdout.cancel().catch(() => {});
    status = await child.status;
  }
  if (!status.success) {
    throw new Error(`The SBI client under callgrind failed (exit ${status.code})`);
  }
  const read = (file: string, first: number) =>
    Promise.all([first, first + 1].map((part) => readCallgrindFile(`${file}.${part}`)));
  return { client: await read(files[0], 1), server: await read(files[1], dumps + 1) };
}

/**
 * Every transport of `plan` counted `plan.repeat` times: the records of
 * instructions per request of each side. The SBI client runs against one
 * server for all of them; a C client, twice per count, each time with a fresh
 * server.
 */
export async function runCallgrind(plan: CallgrindPlan): Promise<CallgrindRun[]> {
  const counts: [number, number] = [Math.round(plan.job.requests / 4), plan.job.requests];
  const records: CallgrindRun[] = [];
  const done = async (r: CallgrindRun) => {
    records.push(r);
    await plan.onRun?.(r);
  };
  if (plan.client === "sbilab") {
    const serverFile = `${plan.out}/server.callgrind`;
    const s = await plan.startServer(valgrind(serverFile));
    try {
      for (let i = 0; i < plan.repeat; i++) {
        for (const transport of plan.transports) {
          const dumps = 2 * records.length;
          const r = await steppedRun(plan, s, serverFile, dumps, transport, counts);
          await done(record(plan, transport, counts, r.client, r.server));
        }
      }
    } finally {
      await s.stop();
    }
    return records;
  }
  for (let i = 0; i < plan.repeat; i++) {
    await done(await twoRuns(plan, counts, `${plan.out}/${i + 1}`));
  }
  return records;
}

/** A C client's counts: two runs of `counts[0]` and `counts[1]` requests, each with a fresh server. */
async function twoRuns(
  plan: CallgrindPlan,
  counts: [number, number],
  prefix: string,
): Promise<CallgrindRun> {
  const transport = plan.transports[0];
  const client: Map<string, number>[] = [];
  const server: Map<string, number>[] = [];
  for (const requests of counts) {
    const files = [
      `${prefix}-client-${requests}.callgrind`,
      `${prefix}-server-${requests}.callgrind`,
    ];
    const s = await plan.startServer(valgrind(files[1]));
    try {
      const job = { ...plan.job, transport, requests };
      await runClient(plan, job, s.origins[transport]!, s.path, files[0]);
    } finally {
      await s.stop();
    }
    client.push(await readCallgrindFile(files[0]));
    server.push(await readCallgrindFile(files[1]));
  }
  return record(plan, transport, counts, client, server);
}

function record(
  plan: CallgrindPlan,
  transport: TransportName,
  counts: [number, number],
  client: Map<string, number>[],
  server: Map<string, number>[],
): CallgrindRun {
  return {
    schema: "sbilab-callgrind/1",
    transport,
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
  return `${run.transport}:\n` + run.sides.map((s) => {
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
