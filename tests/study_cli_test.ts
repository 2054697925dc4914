/**
 * `lab study` from the command line: bad input gives one line and exit 2; a
 * small matrix on loopback (no link, no root) writes JSON, Markdown, CSV and
 * HTML that carry the same verdict.
 */
import assert from "node:assert/strict";
import { parseRun } from "../bench/record/schema.ts";
import { runLab } from "./support.ts";

const dec = new TextDecoder();

async function lab(args: string[], timeoutMs = 120_000) {
  const r = await runLab(args, timeoutMs);
  return { ...r, stdout: dec.decode(r.stdout) };
}

Deno.test("lab study rejects bad options with one line and exit 2", async () => {
  for (
    const [args, message] of [
      [["--budget", "5s"], /^error: --budget must be a duration at least 10s, got 5s/],
      [["--links", "lan,nowhere"], /^error: --links: .*nowhere/],
      [
        ["--flows", "journey,teleport"],
        /^error: --flows must be one of journey, warm-get, got teleport$/m,
      ],
      [["--ues", "0"], /^error: --ues must be a whole number ≥ 1, got 0$/m],
      [["--transports", "h9"], /^error: --transports: Unknown transport h9/],
      [["--stacks", "native,rust"], /^error: --stacks: Unknown stack rust/],
      [
        ["--stack", "native", "--stacks", "native,deno"],
        /^error: --stack and --stacks cannot be used together$/m,
      ],
    ] as const
  ) {
    const r = await lab(["study", ...args]);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.doesNotMatch(r.stderr, /at .*\.ts:\d+/);
  }
});

Deno.test("lab study on loopback writes JSON, Markdown, CSV and HTML with one verdict", async () => {
  const out = await Deno.makeTempDir({ prefix: "sbilab-study-" });
  try {
    const r = await lab([
      "study",
      "--quick",
      "--links",
      "loopback",
      "--ues",
      "2",
      "--flows",
      "warm-get",
      "--budget",
      "20s",
      "--out",
      out,
    ]);
    assert.equal(r.code, 0, r.stderr);
    // One cell of a quick run: decided, or (too few flows, a busy machine) inconclusive.
    assert.match(r.stdout, /^Verdict: (HTTP\/3 has |Inconclusive)/m);
    // The grid: one row per link and UE level, one column per flow.
    assert.match(r.stdout, /^loopback +2 +\S/m);
    const run = parseRun(await Deno.readTextFile(`${out}/study.json`));
    assert.deepEqual(run.study!.links.map((l) => l.spec), ["loopback"]);
    assert.equal(run.study!.budgetMs, 20_000);
    const flowRows = run.rows.filter((x) => x.flow === "warm-get" && x.step === undefined);
    assert.deepEqual(flowRows.map((x) => x.transport).sort(), [...run.config.transports].sort());
    for (const row of run.rows) assert.equal(row.link, "loopback");
    const md = await Deno.readTextFile(`${out}/study.md`);
    assert.match(md, /^# sbilab study/);
    const verdictLine = /^\*\*((?:HTTP\/3 has|Inconclusive)[ :(].*)\*\*$/m.exec(md)?.[1];
    assert.ok(verdictLine, "Markdown states the verdict");
    assert.ok(r.stdout.includes(verdictLine), "the terminal and Markdown verdicts agree");
    assert.match(md, /^\| loopback \| warm-get \| 2 \|/m);
    const csv = (await Deno.readTextFile(`${out}/study.csv`)).trim().split("\n");
    const header = csv[0].split(",");
    const verdictCol = header.indexOf("cell_verdict");
    assert.ok(verdictCol > 0);
    // Row ids: link / stack / scenario / transport / flow / UEs.
    const stack = run.config.stack!;
    assert.ok(stack, "the run names its stack");
    const flowId = new RegExp(`^loopback/${stack}/flows/[^/]+/warm-get/2,`);
    const flowLines = csv.slice(1).filter((l) => flowId.test(l));
    assert.equal(flowLines.length, run.config.transports.length);
    const html = await Deno.readTextFile(`${out}/study.html`);
    assert.match(html, /<canvas id="bars-0"/);
    assert.ok(html.includes(verdictLine.replace(/&/g, "&amp;")), "the HTML verdict agrees");
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
