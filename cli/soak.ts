/** `lab soak`: steady load on every transport while attackers run beside it, judged by bounds. */
import type { Command } from "commander";
import { parseStack } from "../transports/types.ts";
import {
  asUsage,
  checkOutputPaths,
  parseChoice,
  parseDuration,
  parseInteger,
  parseList,
  parseNumber,
} from "./args.ts";
import { createProgress } from "./progress.ts";
import {
  type AttackName,
  ATTACKS,
  DEFAULT_SOAK_BOUNDS,
  renderSoakInterval,
  renderSoakSummary,
  runSoak,
} from "../soak/mod.ts";
import { DEFAULT_OK, parseStatusSet } from "../lib/status_set.ts";
import { RequestError } from "./request_error.ts";

/** Options of `lab soak` as commander hands them over. */
interface SoakFlags {
  time: string;
  stack?: string;
  transports?: string;
  rate: string;
  interval: string;
  attacks: string;
  json?: string;
  quiet?: boolean;
  maxP99: string;
  maxRssGrowth: string;
  ok: string;
  maxFailures: string;
}

async function soak(flags: SoakFlags): Promise<void> {
  await checkOutputPaths({ "--json": flags.json });
  const durationMs = parseDuration(flags.time, "--time", { bare: "s", minMs: 1000 });
  const rate = parseNumber(flags.rate, "--rate", { min: 1 });
  const intervalMs = parseDuration(flags.interval, "--interval", { bare: "s", minMs: 100 });
  const ok = asUsage(() => parseStatusSet(flags.ok), "--ok");
  const maxFailures = parseInteger(flags.maxFailures, "--max-failures");
  const { availableTransports, parseTransports } = await import("../transports/mod.ts");
  const stack = flags.stack === undefined
    ? undefined
    : asUsage(() => parseStack(flags.stack!), "--stack");
  const transports = flags.transports
    ? asUsage(() => parseTransports(flags.transports!), "--transports")
    : await availableTransports(stack);
  const attacks = flags.attacks === "none"
    ? []
    : parseList(flags.attacks, "--attacks").map((a) => parseChoice(a, "--attacks", ATTACKS));
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  Deno.addSignalListener("SIGINT", onSignal);
  // its interval lines are its progress on a terminal; elsewhere progress: lines on stderr
  const progress = createProgress({ quiet: flags.quiet, bar: false, rowName: "interval" });
  const intervals = Math.ceil(durationMs / intervalMs);
  progress.setRows?.(intervals);
  try {
    const report = await runSoak({
      stack,
      transports,
      durationMs,
      intervalMs,
      rate,
      attacks: attacks as AttackName[],
      bounds: {
        p99Ms: parseDuration(flags.maxP99, "--max-p99", { bare: "ms" }),
        rssGrowthBytes: parseInteger(flags.maxRssGrowth, "--max-rss-growth", { min: 1 }) *
          2 ** 20,
      },
      ok,
      signal: controller.signal,
      onInterval: (i) => {
        console.log(renderSoakInterval(i, intervalMs));
        progress.update(`${i.t.toFixed(1)} s`, 1);
      },
    });
    progress.stop();
    console.log(`\n${renderSoakSummary(report)}`);
    if (flags.json) {
      await Deno.writeTextFile(flags.json, JSON.stringify(report, null, 2) + "\n");
      console.error(`wrote ${flags.json}`);
    }
    if (!report.serverAlive) throw new Error("lab serve exited during the soak");
    const slices = Object.values(report.summary).filter((x) => x !== undefined);
    const failed = slices.reduce((n, x) => n + (x.failed ?? 0), 0);
    const errors = slices.reduce((n, x) => n + x.errors, 0);
    const served = slices.reduce((n, x) => n + x.served, 0);
    console.log(
      `requests: ${served} succeeded, ${failed} failed, ${errors} error${
        errors === 1 ? "" : "s"
      } (success: status ${ok.text} and the payload's size)`,
    );
    if (failed + errors > maxFailures) {
      const msg = `${failed + errors} steady request(s) failed (${failed} by status, ${errors} ` +
        `without a right answer); --max-failures ${maxFailures}`;
      if (errors === 0) throw new RequestError("http", msg);
      throw new Error(msg);
    }
    if (report.crossed.length) {
      throw new Error(
        `The soak crossed ${report.crossed.length} bound(s): ${report.crossed.join("; ")}`,
      );
    }
  } finally {
    progress.stop();
    Deno.removeSignalListener("SIGINT", onSignal);
  }
}

/** Adds `soak` to the program. */
export function registerSoakCommand(program: Command): void {
  program
    .command("soak")
    .description(
      "steady load on every transport while attackers run beside it; rate, errors, latency and server RSS over time; exit 1 when a bound is crossed",
    )
    .option("--time <time>", "how long to run (2m, 90s; bare number = s)", "60")
    .option("--stack <stack>", "native (default) or deno: the servers lab serve runs")
    .option("--transports <list>", "comma-separated transports (default: every available one)")
    .option("--rate <req/s>", "steady requests per second on each transport", "200")
    .option("--interval <time>", "reporting interval (500ms, 1s; bare number = s)", "1")
    .option("--attacks <list>", `${ATTACKS.join(",")}, or none`, ATTACKS.join(","))
    .option("--json <file>", "save the report as JSON")
    .option(
      "--ok <statuses>",
      "statuses that count as a success: codes and classes, e.g. 200 or 2xx",
      DEFAULT_OK,
    )
    .option("--max-failures <n>", "failed steady requests tolerated before exit non-zero", "0")
    .option("-q, --quiet", "no progress: lines on stderr when it is not a terminal")
    .option(
      "--max-p99 <time>",
      "bound: highest p99 of any transport (bare number = ms); exit 1 past it",
      String(DEFAULT_SOAK_BOUNDS.p99Ms),
    )
    .option(
      "--max-rss-growth <MiB>",
      "bound: most the server's RSS may grow; exit 1 past it",
      String(DEFAULT_SOAK_BOUNDS.rssGrowthBytes / 2 ** 20),
    )
    .action(async (flags: SoakFlags) => {
      await soak(flags);
    });
}
