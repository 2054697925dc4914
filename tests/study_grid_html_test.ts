/**
 * The study's HTML report opened in headless Chromium: it opens with the
 * verdict's sentence and grid, one cell per planned cell (links × flows × UE
 * levels, both stack families side by side), each coloured by its decision,
 * and the warnings folded under their count. Screenshots are kept at
 * build/artifacts/study-grid.png (the page) and study-verdict.png (the section).
 */
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { loadChartLibrary, renderHtml } from "../bench/report/mod.ts";
import { type BenchRun, type ResultRow, SCHEMA_VERSION } from "../bench/record/mod.ts";
import { createRng, estimate, shuffled } from "../bench/stats/mod.ts";
import { DEFAULT_RULE, STUDY_SECTIONS, studyVerdict } from "../study/mod.ts";
import { needsTool, ROOT } from "./support.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = `${ROOT}/build/artifacts`;
const skip = needsTool("chromium", "chromium");
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"];

const LINKS = ["lan", "metro", "wan", "lossy"];
const UES = [64, 256];
const FLOWS = ["registration", "pdu-session", "handover", "service-request", "warm-get"];
const STACKS = ["native", "deno"];

/** n flow times spread evenly over [lo, hi] (ns), in a seeded random order (no bursts). */
function spread(lo: number, hi: number, n = 600): number[] {
  const times = Array.from({ length: n }, (_, i) => (lo + ((hi - lo) * i) / (n - 1)) * 1e6);
  return shuffled(times, createRng(n));
}

function row(
  stack: string,
  link: string,
  ues: number,
  flow: string,
  transport: string,
  samples: number[],
  extra: Record<string, number> = {},
): ResultRow {
  return {
    id: `${link}/flows/${transport}/${flow}/${ues}`,
    scenario: "flows",
    transport: transport as ResultRow["transport"],
    label: flow,
    concurrency: ues,
    estimate: estimate(samples),
    samples: { count: samples.length, complete: true, samples, histogram: "" },
    errors: 0,
    extra: { failed: 0, onTimeShare: 1, "cpu:client": 0.3, ...extra },
    flow,
    link,
    stack: stack as ResultRow["stack"],
  };
}

/**
 * A study of both families: lan equal (not material), metro with a saturated
 * client (not valid), wan a clear HTTP/3 advantage (material), lossy at 64
 * UEs too few flows (undecided), lossy at 256 UEs no data at all.
 */
function syntheticStudy(): BenchRun {
  const rows: ResultRow[] = [];
  for (const stack of STACKS) {
    for (const link of LINKS) {
      for (const ues of UES) {
        if (link === "lossy" && ues === 256) continue;
        for (const flow of FLOWS) {
          const add = (t: string, s: number[], extra?: Record<string, number>) =>
            rows.push(row(stack, link, ues, flow, t, s, extra));
          if (link === "lan") {
            for (const t of ["h2c", "h2-tls", "h3"]) add(t, spread(10, 20));
          } else if (link === "metro") {
            add("h2c", spread(20, 40), { "cpu:client": 0.97 });
            add("h2-tls", spread(20, 40));
            add("h3", spread(20, 40));
          } else if (link === "wan") {
            add("h2c", spread(100, 300));
            add("h2-tls", spread(100, 300));
            add("h3", spread(50, 100));
          } else {
            add("h2c", spread(100, 300, 300));
            // A tail that swamps the median: a warning, folded under the grid.
            add("h2-tls", [...spread(100, 300, 290), ...spread(9000, 10_000, 10)]);
            add("h3", spread(60, 250, 300));
          }
        }
      }
    }
  }
  const dir = {
    delayMs: 0,
    jitterMs: 0,
    loss: 0,
    burst: 0,
    rateBps: 0,
    queue: 0,
    reorder: 0,
    dup: 0,
  };
  return {
    schema: SCHEMA_VERSION,
    startedAt: "2026-12-03T00:00:00Z",
    durationMs: 900_000,
    config: {
      scenario: "flows",
      stack: "native",
      transports: ["h2c", "h2-tls", "h3"],
      sizes: [256],
      warmupMs: 1000,
      sampleMs: 30_000,
      samples: 2400,
      quick: false,
      serverMode: "link",
      delayMs: 0,
      concurrency: UES,
      flows: ["journey", "warm-get"],
      schedule: "interleaved",
    },
    environment: {
      cpuModel: "synthetic",
      cores: 2,
      kernel: "-",
      os: "-",
      hostname: "-",
      deno: "-",
      v8: "-",
      typescript: "-",
      libraries: {},
      gitRevision: "synthetic",
    },
    floors: { rows: [], skipped: "not measured" },
    rows,
    notes: ["h2c registration at 64 UEs: 40 of 600 arrivals waited for a free UE slot."],
    study: {
      links: LINKS.map((spec) => ({
        spec,
        resolved: spec,
        backend: "relay" as const,
        rttMs: 0,
        up: dir,
        down: { ...dir },
      })),
      stacks: STACKS as BenchRun["config"]["stack"][] as NonNullable<BenchRun["study"]>["stacks"],
      budgetMs: 900_000,
      elapsedMs: 880_000,
      sampleMs: 30_000,
      samples: 2400,
      rule: { ...DEFAULT_RULE },
    },
  } as BenchRun;
}

Deno.test({
  name: "the study's HTML report opens with its verdict and one grid cell per planned cell",
  ignore: skip,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const run = syntheticStudy();
    const v = studyVerdict(run);
    const planned = LINKS.length * UES.length * FLOWS.length * STACKS.length;
    assert.equal(v.cells.length, planned);
    const html = renderHtml(run, await loadChartLibrary(), { sections: STUDY_SECTIONS });
    await Deno.mkdir(ARTIFACTS, { recursive: true });
    const path = `${ARTIFACTS}/study-grid.html`;
    const shot = `${ARTIFACTS}/study-grid.png`;
    await Deno.remove(shot).catch(() => {});
    await Deno.writeTextFile(path, html);
    const userDataDir = await Deno.makeTempDir({ prefix: "sbilab-chromium-" });
    const browser = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      viewport: { width: 1500, height: 900 },
      timeout: 60_000,
    });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.route(
        "**/*",
        (route) => route.request().url().startsWith("file:") ? route.continue() : route.abort(),
      );
      await page.goto(`file://${path}`, { timeout: 30_000 });
      const seen = await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        const d = (globalThis as any).document;
        const cells = Array.from(d.querySelectorAll("table.verdict-grid td.cell")) as {
          dataset: { status: string };
        }[];
        const colour = (status: string) => {
          const el = d.querySelector(`table.verdict-grid td.cell.${status}`);
          // deno-lint-ignore no-explicit-any
          return el ? (globalThis as any).getComputedStyle(el).backgroundColor : "";
        };
        const firstSection = d.querySelector("section")?.id ?? "";
        const box = d.querySelector("table.verdict-grid").getBoundingClientRect();
        return {
          statuses: cells.map((c) => c.dataset.status),
          firstSection,
          sentence: d.querySelector("#verdict p.verdict")?.textContent ?? "",
          material: colour("material"),
          notMaterial: colour("not-material"),
          undecided: colour("undecided"),
          stackHeads: Array.from(d.querySelectorAll("table.verdict-grid th.stack")).length,
          warningsFolded: d.querySelector("details.warnings summary")?.textContent ?? "",
          gridTop: box.top,
        };
      });
      await page.screenshot({ path: shot, fullPage: true, timeout: 30_000 });
      await page.locator("#verdict").screenshot({
        path: `${ARTIFACTS}/study-verdict.png`,
        timeout: 30_000,
      });
      assert.deepEqual(errors, []);
      // One cell per planned cell, each marked with its decision.
      assert.equal(seen.statuses.length, planned);
      const count = (s: string) => seen.statuses.filter((x) => x === s).length;
      assert.equal(count("material"), v.counts.material);
      assert.equal(count("not-material"), v.counts.notMaterial);
      assert.equal(count("undecided"), v.counts.undecided);
      assert.equal(count("not-valid"), v.counts.notValid);
      assert.equal(count("no-data"), v.counts.noData);
      assert.deepEqual(
        [v.counts.material, v.counts.notMaterial, v.counts.notValid, v.counts.undecided],
        [20, 20, 20, 10],
      );
      // The report opens with the verdict: its sentence, then the grid on the first screen.
      assert.equal(seen.firstSection, "verdict");
      assert.equal(seen.sentence, v.summary);
      assert.ok(seen.gridTop < 900, `grid starts at ${seen.gridTop}px`);
      // Decisions differ in colour; both families side by side under every flow.
      assert.equal(seen.material, "rgb(26, 152, 80)");
      assert.notEqual(seen.notMaterial, seen.material);
      assert.notEqual(seen.undecided, seen.notMaterial);
      assert.equal(seen.stackHeads, FLOWS.length * STACKS.length);
      assert.match(seen.warningsFolded, /^\d+ warnings?$/);
      const size = (await Deno.stat(shot)).size;
      assert.ok(size > 20_000, `screenshot is only ${size} bytes`);
    } finally {
      await browser.close();
      await Deno.remove(userDataDir, { recursive: true }).catch(() => {});
    }
  },
});
