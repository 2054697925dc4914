/**
 * `lab bench`. The CLI's commands (`bench.ts`, `study.ts`, `report.ts`) and
 * the reporters are the only parts of `bench/` that write to the console.
 */
import type { Command } from "commander";
import { parseStack, type TransportName } from "../transports/types.ts";
import {
  engineFor,
  linkContextFromEnv,
  runBench,
  runBenchAcrossLink,
  runRepeated,
} from "../bench/run/mod.ts";
import { type ScenarioName, SCENARIOS } from "../bench/record/mod.ts";
import { parseSize } from "../lib/units.ts";
import { createProgress } from "./progress.ts";
import { renderCharts, renderTable, writeReports } from "../bench/report/mod.ts";
import { STUDY_PLUGINS, STUDY_SECTIONS } from "../study/mod.ts";
import { parseLinkSpec } from "../linkemu/link_spec.ts";
import {
  asUsage,
  asUsageAsync,
  checkOutputPaths,
  exclusive,
  hintArgument,
  invalid,
  parseChoice,
  parseDuration,
  parseHeader,
  parseInteger,
  parseList,
  parseNumber,
  UsageError,
} from "./args.ts";
import type { LinkBackend } from "../linkemu/link.ts";
import { DEFAULT_OK, parseStatusSet } from "../lib/status_set.ts";
import type { TargetRequest } from "../bench/scenarios/mod.ts";
import { requestBody } from "./request.ts";
import { RequestError, requestFailureKind } from "./request_error.ts";
import { judgeRun } from "./run_judgement.ts";

/** Options as commander hands them over. */
interface BenchFlags {
  scenario: string;
  stack?: string;
  mtu?: string;
  transports?: string;
  sizes?: string;
  warmUp?: string;
  time?: string;
  samples?: string;
  quick?: boolean;
  inProcess?: boolean;
  target?: string;
  targetH3?: string;
  ca?: string;
  insecure?: boolean;
  delayMs?: string;
  rate?: string;
  concurrency?: string;
  streams?: string;
  flows?: string;
  engine?: string;
  p99?: string;
  link?: string;
  linkBackend?: string;
  floors?: boolean;
  json?: string;
  md?: string;
  csv?: string;
  html?: string;
  charts?: boolean;
  // Interleaved rounds and repeats (see roundFlags).
  schedule?: string;
  rounds?: string;
  block?: string;
  seed?: string;
  runs?: string;
  quiet?: boolean;
  // The request of every row, and how its answers are judged.
  path?: string;
  method?: string;
  header: string[];
  data?: string;
  dataBinary?: string;
  ok: string;
  maxFailures: string;
}

/** The interleaved-round and repeat flags, parsed: `--schedule --rounds --block --seed --runs`. */
function roundFlags(flags: BenchFlags) {
  if (flags.schedule !== undefined) {
    parseChoice(flags.schedule, "--schedule", ["interleaved", "sequential"]);
  }
  if (
    flags.schedule === "interleaved" && flags.scenario !== undefined &&
    !["rtt", "flows", "peers"].includes(flags.scenario)
  ) {
    throw new UsageError(
      `--scenario ${flags.scenario} runs sequentially only (interleaved: rtt, flows, peers)`,
    );
  }
  if (flags.schedule === "sequential" && flags.scenario === "peers") {
    throw new UsageError("--scenario peers runs in interleaved rounds only");
  }
  return {
    schedule: flags.schedule as "interleaved" | "sequential" | undefined,
    rounds: flags.rounds !== undefined
      ? parseInteger(flags.rounds, "--rounds", { min: 2 })
      : undefined,
    blockMs: flags.block !== undefined
      ? parseNumber(flags.block, "--block", { min: 1 })
      : undefined,
    seed: flags.seed !== undefined ? parseInteger(flags.seed, "--seed", { min: 0 }) : undefined,
    runs: flags.runs !== undefined ? parseInteger(flags.runs, "--runs", { min: 1 }) : 1,
  };
}

/** `--target` and `--target-h3`, checked: http(s) URLs (a malformed one is curl's status 3). */
async function checkTarget(flags: BenchFlags): Promise<void> {
  if (flags.target) {
    const { parseTargetList } = await import("../bench/measure/mod.ts");
    let list: ReturnType<typeof parseTargetList>;
    try {
      list = parseTargetList(flags.target);
    } catch { /* reported below */ }
    for (const text of list ? Object.values(list) : [flags.target]) {
      let scheme: string | undefined;
      try {
        scheme = new URL(text!).protocol;
      } catch { /* not a URL */ }
      if (scheme !== "http:" && scheme !== "https:") {
        // a malformed URL: curl's status 3
        throw new RequestError(
          "url",
          invalid(
            "--target",
            "http://host:port, https://host:port or transport=url,…",
            flags.target,
          )
            .message,
        );
      }
    }
    if (flags.inProcess) throw exclusive("--target", "--in-process");
  }
  if (flags.targetH3 !== undefined) {
    if (!flags.target) throw new UsageError("--target-h3 needs --target");
    if (!/^https:\/\/[^/]/.test(flags.targetH3)) {
      throw invalid("--target-h3", "https://host:port", flags.targetH3);
    }
  }
}

/**
 * `--link`, `--link-backend` and `--mtu`, checked: the link to run across,
 * if any (`--mtu` alone is a plain veth pair: the `lan` profile, backend veth,
 * which it writes back into `flags`).
 */
function linkFlags(
  flags: BenchFlags,
): { link: ReturnType<typeof parseLinkSpec> | undefined; mtu: number | undefined } {
  let link: ReturnType<typeof parseLinkSpec> | undefined;
  if (flags.link !== undefined) {
    if (flags.target) throw exclusive("--link", "--target");
    if (flags.inProcess) throw exclusive("--link", "--in-process");
    link = asUsage(() => parseLinkSpec(flags.link!), "--link");
  }
  if (flags.linkBackend !== undefined) {
    parseChoice(flags.linkBackend, "--link-backend", ["relay", "netem", "veth"]);
  }
  let mtu: number | undefined;
  if (flags.mtu !== undefined) {
    mtu = parseInteger(flags.mtu, "--mtu", { min: 1280, max: 65535 });
    if (flags.target) throw exclusive("--mtu", "--target");
    if (flags.inProcess) throw exclusive("--mtu", "--in-process");
    if (link === undefined) {
      // A plain veth pair: nothing but the MTU differs from loopback.
      link = parseLinkSpec("lan");
      flags.linkBackend ??= "veth";
      flags.link = "lan";
    }
  }
  return { link, mtu };
}

/**
 * `lab bench`'s flags, checked in the order a user meets them: the options
 * of every run (without its progress hook and signal), the link, the number
 * of runs and how their requests are judged. Throws `UsageError` naming the
 * flag, or `RequestError` for a malformed target URL.
 */
async function benchPlan(flags: BenchFlags) {
  parseChoice(flags.scenario, "--scenario", SCENARIOS);
  await checkOutputPaths({
    "--json": flags.json,
    "--md": flags.md,
    "--csv": flags.csv,
    "--html": flags.html,
  });
  const stack = flags.stack === undefined
    ? undefined
    : asUsage(() => parseStack(flags.stack!), "--stack");
  asUsage(
    () => engineFor(flags.scenario as ScenarioName, flags.engine as "native" | "sbi" | undefined),
    "--engine",
  );
  let transports: TransportName[] | undefined;
  if (flags.transports) {
    const { parseTransports } = await import("../transports/mod.ts");
    transports = asUsage(() => parseTransports(flags.transports!), "--transports");
  }
  const sizes = flags.sizes
    ? asUsage(() => parseList(flags.sizes!, "--sizes").map(parseSize), "--sizes")
    : undefined;
  await checkTarget(flags);
  const { link, mtu } = linkFlags(flags);
  const { runs, ...rounds } = roundFlags(flags);
  const request = await targetRequest(flags);
  const ok = asUsage(() => parseStatusSet(flags.ok), "--ok");
  const maxFailures = parseInteger(flags.maxFailures, "--max-failures");
  const options = {
    ...rounds,
    scenario: flags.scenario as ScenarioName,
    stack,
    transports,
    sizes,
    warmupMs: flags.warmUp !== undefined
      ? parseDuration(flags.warmUp, "--warm-up", { bare: "s" })
      : undefined,
    sampleMs: flags.time !== undefined
      ? parseDuration(flags.time, "--time", { bare: "s", minMs: 50 })
      : undefined,
    samples: flags.samples !== undefined
      ? parseInteger(flags.samples, "--samples", { min: 2 })
      : undefined,
    quick: flags.quick,
    inProcess: flags.inProcess,
    target: flags.target,
    targetH3: flags.targetH3,
    caFile: flags.ca,
    insecure: flags.insecure,
    delayMs: flags.delayMs !== undefined ? parseNumber(flags.delayMs, "--delay-ms") : undefined,
    rate: flags.rate !== undefined ? parseNumber(flags.rate, "--rate", { min: 0.001 }) : undefined,
    concurrency: flags.concurrency
      ? parseList(flags.concurrency, "--concurrency").map((c) =>
        parseInteger(c, "--concurrency", { min: 1 })
      )
      : undefined,
    streams: flags.streams !== undefined
      ? parseInteger(flags.streams, "--streams", { min: 1 })
      : undefined,
    flows: flags.flows !== undefined ? parseList(flags.flows, "--flows") : undefined,
    engine: flags.engine as "native" | "sbi" | undefined,
    p99BoundMs: flags.p99 !== undefined
      ? parseNumber(flags.p99, "--p99", { min: 0.001 })
      : undefined,
    skipFloors: flags.floors === false,
    request,
    ok,
  };
  return { options, link, mtu, runs, ok, maxFailures };
}

async function bench(flags: BenchFlags): Promise<void> {
  const plan = await benchPlan(flags);
  const { link, mtu, ok } = plan;
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  Deno.addSignalListener("SIGINT", onSignal);
  const progress = createProgress({ quiet: flags.quiet });
  try {
    const options = { ...plan.options, onProgress: progress.update, signal: controller.signal };
    const runOne = (o: typeof options) =>
      link
        ? runBenchAcrossLink(link, {
          ...o,
          specText: flags.link,
          backend: (flags.linkBackend ?? "relay") as LinkBackend,
          mtu,
        })
        : runBench({ ...o, ...linkContextFromEnv(), plugins: STUDY_PLUGINS });
    const run = await runRepeated(
      plan.runs,
      options,
      (o) => targetFailure(runOne(o), flags.target),
      {
        // Each run its own seed of round orders (consecutive from --seed when given).
        optionsFor: (i, o) => ({ ...o, seed: o.seed !== undefined ? o.seed + i : undefined }),
        onRun: (i, n) => n > 1 && progress.update(`run ${i + 1} of ${n}`, 0),
      },
    );
    progress.stop();
    console.log(renderTable(run, { sections: STUDY_SECTIONS }));
    if (flags.charts !== false) {
      const charts = renderCharts(run);
      if (charts) console.log(`\n${charts}`);
    }
    const written = await writeReports(run, {
      json: flags.json,
      md: flags.md,
      csv: flags.csv,
      html: flags.html,
    }, { sections: STUDY_SECTIONS });
    for (const w of written) console.error(`wrote ${w}`);
    judgeRun(run, ok, plan.maxFailures);
  } finally {
    progress.stop();
    Deno.removeSignalListener("SIGINT", onSignal);
  }
}

/** `--path`, `-X`, `-H`, `-d`: the request every row sends, with `lab request`'s meanings. */
async function targetRequest(flags: BenchFlags): Promise<TargetRequest | undefined> {
  const given = flags.path !== undefined || flags.method !== undefined ||
    flags.header.length > 0 || flags.data !== undefined || flags.dataBinary !== undefined;
  if (!given) return undefined;
  const path = flags.path ?? "/";
  if (!path.startsWith("/")) throw invalid("--path", "a path from / (with its query)", path);
  const headers: Record<string, string> = {};
  for (const h of flags.header) {
    const [k, v] = parseHeader(h);
    headers[k] = v;
  }
  const body = await asUsageAsync(() => requestBody(flags), "-d");
  if (body && !Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) {
    headers["content-type"] = "application/json";
  }
  const method = (flags.method ?? (body ? "POST" : "GET")).toUpperCase();
  if (!/^[A-Z]+$/.test(method)) throw invalid("-X", "an HTTP method", flags.method!);
  return { method, path, headers, ...(body ? { body } : {}) };
}

/** A target that did not answer fails with curl's status where one fits (7 refused, 6 unknown host). */
async function targetFailure<T>(run: Promise<T>, target: string | undefined): Promise<T> {
  try {
    return await run;
  } catch (err) {
    const kind = target && (err as Error).name === "ServerSetupError"
      ? requestFailureKind(err)
      : undefined;
    if (kind) throw new RequestError(kind, (err as Error).message, { cause: err });
    throw err;
  }
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

const BENCH_EXIT_HELP = `
Every response is judged by --ok (default 2xx and 3xx); each row keeps its
status counts, and the run ends with "requests: N succeeded, M failed, E errors".

Exit status (curl's where curl has one):
  0   rows measured, failures within --max-failures
  1   no row measured (the notes say why), failures past --max-failures that
      include requests without a response, or any other failure
  2   bad usage
  3   malformed --target URL
  6   the target's host did not resolve
  7   no transport of the target accepted a connection
  22  failures past --max-failures, all of them other statuses
  130 interrupted (Ctrl-C)`;

/** Adds `bench` to the program. Bad input throws {@linkcode UsageError}. */
export function registerBenchCommand(program: Command): void {
  hintArgument("lab bench", "--scenario", SCENARIOS);
  program
    .command("bench")
    .description("benchmark the transports against the machine's floors")
    .option("--scenario <name>", `one of ${SCENARIOS.join(", ")}`, "rtt")
    .option(
      "--stack <stack>",
      "native (nghttp2 + ngtcp2, GnuTLS; default) or deno (Deno.serve + fetch for h2; Deno's QUIC (quinn) + nghttp3 for h3)",
    )
    .option("--transports <list>", "comma-separated transports (default: every available one)")
    .option("--sizes <list>", "body sizes, e.g. 256,16K (default 256,16K; bulk 1M,16M)")
    .option(
      "--warm-up <time>",
      "warm-up: 3s, 300ms; bare number = s (interleaved rtt: 1s before the rounds, quick 200ms; sequential scenarios: per row 3s, quick 300ms)",
    )
    .option(
      "--time <time>",
      "sampling time; bare number = s (interleaved rtt: each arm's over all rounds, default rounds × block = 1.8s, quick 200ms; sequential scenarios: per row 5s, quick 700ms)",
    )
    .option(
      "--samples <n>",
      "samples per row instead of a sampling time (bounded by 60 s); flows: per journey row, warm-get rows 4x",
    )
    .option("--quick", "a run of a few seconds")
    .option("--in-process", "run the servers in this process instead of their own")
    .option(
      "--target <url>",
      "benchmark a server elsewhere (floors are skipped); transports that do not answer are reported failed, the rest measured",
    )
    .option(
      "--target-h3 <url>",
      "h3's own https:// URL when it is not at --target's port (default: the h2-TLS answer's Alt-Svc, else --target)",
    )
    .option("--ca <file>", "CA certificate to trust for an https target")
    .option("-k, --insecure", "do not verify an https target's certificate")
    .option("--delay-ms <ms>", "handler delay passed to the server", undefined)
    .option(
      "--rate <per-s>",
      "open-loop rate: req/s for --scenario rate (default 1000), UE arrivals/s for flows (default: half the UE slots busy)",
    )
    .option(
      "--concurrency <list>",
      "in-flight levels for --scenario concurrency (default 1,8,64,256); UEs in flight for flows (default 8)",
    )
    .option("--flows <list>", "streams for --scenario flows: journey,warm-get (default both)")
    .option("--streams <n>", "concurrent streams on one connection for --scenario hol (default 16)")
    .option(
      "--engine <engine>",
      "native (load engine in C; default for concurrency, rate, bulk, capacity) or sbi (SBI client)",
    )
    .option("--p99 <ms>", "p99 bound for --scenario capacity (default 10)")
    .option(
      "--link <spec>",
      "run across an emulated link: a profile (lan, wan, lossy, …) or key=value list; needs root",
    )
    .option(
      "--link-backend <backend>",
      "how the link's namespaces are joined: relay (default), netem, or veth (no impairment)",
    )
    .option(
      "--mtu <bytes>",
      "run across two namespaces with this MTU (alone: a plain veth pair, e.g. 1500); needs root",
    )
    .option("--no-floors", "skip the floor measurements")
    // Interleaved rounds and repeats.
    .option(
      "--schedule <mode>",
      "interleaved (rounds; the default for rtt, the only one for peers) or sequential (one row after another)",
    )
    .option("--rounds <n>", "interleaved: measured rounds (default 60, quick 10; peers 8, quick 3)")
    .option(
      "--block <ms>",
      "interleaved: each arm's block per round in ms (default 30, quick 20; peers 300, quick 150)",
    )
    .option("--seed <n>", "interleaved: seed of the round orders (default random, recorded)")
    .option("--runs <n>", "repeat the whole run N times, each with its own server process")
    .option("--no-charts", "do not print the terminal bar charts")
    .option("-q, --quiet", "no progress (a bar on a terminal, else progress: lines on stderr)")
    .option("--json <file>", "save the run as JSON (re-render with lab report)")
    .option("--md <file>", "write a Markdown report")
    .option("--csv <file>", "write the rows as CSV")
    .option("--html <file>", "write a self-contained HTML report with charts")
    // The request of every row (rtt, concurrency, rate, capacity, cold), as lab request has them.
    .option(
      "--path <path>",
      "request this path and query instead of the payload GET (a target NF's own operation)",
    )
    .option("-X, --method <method>", "HTTP method (default GET, or POST with -d)")
    .option("-H, --header <line>", "extra header 'Name: value' (repeatable)", collect, [])
    .option(
      "-d, --data <data>",
      "request body; @FILE (or @-) is read with CR and LF removed, as curl's -d",
    )
    .option("--data-binary <data>", "request body; @FILE (or @-) is sent byte for byte")
    .option(
      "--ok <statuses>",
      "statuses that count as a success: codes and classes, e.g. 200,201,204 or 2xx",
      DEFAULT_OK,
    )
    .option("--max-failures <n>", "failed or errored requests tolerated before exit non-zero", "0")
    .addHelpText("after", BENCH_EXIT_HELP)
    .action(async (flags: BenchFlags) => {
      await bench(flags);
    });
}
