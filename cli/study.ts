/** `lab study`: call flows × links × transports × UE concurrency, with a verdict. */
import type { Command } from "commander";
import { parseStack, type TransportName } from "../transports/types.ts";
import { formatBudgetUse } from "../lib/units.ts";
import { writeReports } from "../bench/report/mod.ts";
import { STUDY_SECTIONS } from "../study/mod.ts";
import { parseLinkSpec } from "../linkemu/link_spec.ts";
import {
  asUsage,
  parseChoice,
  parseDuration,
  parseInteger,
  parseList,
  UsageError,
} from "./args.ts";
import { DEFAULT_OK, parseStatusSet } from "../lib/status_set.ts";
import { judgeRun } from "./run_judgement.ts";

interface StudyFlags {
  quiet?: boolean;
  stack?: string;
  stacks?: string;
  quick?: boolean;
  budget?: string;
  links?: string;
  transports?: string;
  ues?: string;
  flows?: string;
  schedule?: string;
  seed?: string;
  out: string;
  maxFailures: string;
}

/**
 * The study's progress on stderr: one line redrawn in place on a terminal,
 * `progress: cells 12/40 · 5m10s of 15m00s · about 6m20s left · …` lines on a
 * pipe (when a cell finishes, and at least every 30 s while time moves).
 */
function studyProgress(quiet: boolean | undefined) {
  const enc = new TextEncoder();
  const tty = Deno.stderr.isTerminal();
  let lastCells = -1;
  let lastAt = -Infinity;
  let drawn = false;
  return {
    update(p: import("../study/study.ts").StudyProgress, line: string) {
      if (quiet) return;
      if (tty) {
        const width = Math.max(40, (Deno.consoleSize?.().columns ?? 100) - 1);
        Deno.stderr.writeSync(enc.encode(`\r\x1b[K${line.slice(0, width)}`));
        drawn = true;
        return;
      }
      const now = performance.now();
      if (p.cellsDone === lastCells && now - lastAt < 30_000) return;
      lastCells = p.cellsDone;
      lastAt = now;
      Deno.stderr.writeSync(enc.encode(`progress: ${line}\n`));
    },
    stop() {
      if (drawn) Deno.stderr.writeSync(enc.encode("\r\x1b[K"));
      drawn = false;
    },
  };
}

async function study(flags: StudyFlags): Promise<number> {
  const { progressLine, runStudy, STUDY_LINKS } = await import("../study/study.ts");
  const { gridTable, verdictGrid, GRID_LEGEND } = await import("../study/verdict_grid.ts");
  const { studyVerdict } = await import("../study/verdict.ts");
  const { verdictTable } = await import("../study/verdict_table.ts");
  const { layoutColumns } = await import("../bench/report/mod.ts");
  const stack = flags.stack === undefined
    ? undefined
    : asUsage(() => parseStack(flags.stack!), "--stack");
  const stacks = flags.stacks === undefined
    ? undefined
    : parseList(flags.stacks, "--stacks").map((st) => asUsage(() => parseStack(st), "--stacks"));
  if (stacks && stack) throw new UsageError("--stack and --stacks cannot be used together");
  const budgetMs = flags.budget === undefined
    ? undefined
    : parseDuration(flags.budget, "--budget", { bare: "s", minMs: 10_000 });
  const links = flags.links === undefined ? undefined : parseList(flags.links, "--links");
  for (const l of links ?? []) if (l !== "loopback") asUsage(() => parseLinkSpec(l), "--links");
  let transports: TransportName[] | undefined;
  if (flags.transports) {
    const { parseTransports } = await import("../transports/mod.ts");
    transports = asUsage(() => parseTransports(flags.transports!), "--transports");
  }
  const ues = flags.ues
    ? parseList(flags.ues, "--ues").map((c) => parseInteger(c, "--ues", { min: 1 }))
    : undefined;
  const flows = flags.flows
    ? parseList(flags.flows, "--flows").map((f) =>
      parseChoice(f, "--flows", ["journey", "warm-get"])
    )
    : undefined;
  const maxFailures = parseInteger(flags.maxFailures, "--max-failures");
  try {
    await Deno.mkdir(flags.out, { recursive: true });
  } catch (err) {
    throw new Error(`Cannot create ${flags.out}: ${(err as Error).message}`);
  }
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  Deno.addSignalListener("SIGINT", onSignal);
  const progress = studyProgress(flags.quiet);
  try {
    const run = await runStudy({
      stack,
      stacks,
      quick: flags.quick,
      budgetMs,
      links: links ?? STUDY_LINKS,
      transports,
      ues,
      flows,
      schedule: flags.schedule === undefined
        ? undefined
        : parseChoice(flags.schedule, "--schedule", ["interleaved", "sequential"]) as
          | "interleaved"
          | "sequential",
      seed: flags.seed === undefined ? undefined : parseInteger(flags.seed, "--seed", { min: 0 }),
      onStudyProgress: (p) => progress.update(p, progressLine(p)),
      signal: controller.signal,
    });
    progress.stop();
    const v = studyVerdict(run);
    const t = verdictTable(v);
    const g = gridTable(verdictGrid(v, run.study?.links.map((l) => l.spec)));
    console.log(`Verdict: ${v.summary}\n`);
    console.log(layoutColumns(g.header, g.body));
    console.log(`${GRID_LEGEND}\n`);
    console.log(layoutColumns(t.header, t.body));
    const base = `${flags.out.replace(/\/$/, "")}/study`;
    const writing = performance.now();
    const written = await writeReports(run, {
      json: `${base}.json`,
      md: `${base}.md`,
      csv: `${base}.csv`,
      html: `${base}.html`,
    }, { sections: STUDY_SECTIONS });
    for (const w of written) console.error(`wrote ${w}`);
    console.error(
      `study: the matrix ${formatBudgetUse(run.durationMs, run.study!.budgetMs)}; ` +
        `writing the reports took ${Math.round((performance.now() - writing) / 1000)} s`,
    );
    judgeRun(run, parseStatusSet(DEFAULT_OK), maxFailures, "the status each step expects");
  } finally {
    progress.stop();
    Deno.removeSignalListener("SIGINT", onSignal);
  }
  return 0;
}

/** Adds `study` to the program. */
export function registerStudyCommand(program: Command): void {
  program
    .command("study")
    .description(
      "run the follow-up study: call flows × links × transports × UE concurrency, with a verdict (needs root for links)",
    )
    .option(
      "--stack <stack>",
      "native (nghttp2 + ngtcp2, GnuTLS; default) or deno (Deno.serve + fetch for h2; Deno's QUIC (quinn) + nghttp3 for h3)",
    )
    .option(
      "--stacks <list>",
      "run the matrix on several families within the one budget, e.g. native,deno; the verdict says whether they agree",
    )
    .option("--quick", "a smoke run of a few minutes: one UE level, short rows")
    .option(
      "--budget <time>",
      "time budget for the matrix: 60m, 90s; bare number = s; at least 10s (default 75m, quick 4m); journey cells take up to 19,200 flows per side (warm-get 8x, planned to 4x), as far as the budget allows; 40m stops at 9,600, each further halving halves it (20m: 4,800), 81m to 160m plan 38,400",
    )
    .option("--links <list>", "link profiles or specs, or loopback (default lan,metro,wan,lossy)")
    .option("--transports <list>", "comma-separated transports (default: every available one)")
    .option("--ues <list>", "UE concurrency levels (default 64,256; quick 64)")
    .option("--flows <list>", "streams: journey,warm-get (default both)")
    .option(
      "--schedule <s>",
      "interleaved (default: a cell's transports take turns in rounds) or sequential",
    )
    .option("--seed <n>", "seed of the round orders (default random, recorded)")
    .option("--out <dir>", "where study.json, .md, .csv and .html go", "build/study")
    .option(
      "--max-failures <n>",
      "step answers with a status the step does not expect, or no answer, tolerated before exit non-zero",
      "0",
    )
    .option("-q, --quiet", "no progress (a bar on a terminal, else progress: lines on stderr)")
    .action(async (flags: StudyFlags) => {
      await study(flags);
    });
}
