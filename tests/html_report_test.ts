/**
 * The HTML report opened in headless Chromium (Debian's `chromium`, driven by
 * playwright-core): every chart renders with data, nothing is fetched from the
 * network, the console stays clean, and a screenshot is kept at
 * build/artifacts/report.png for CI to archive.
 */
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { runBench } from "../bench/run/run_bench.ts";
import { type ChartLibrary, loadChartLibrary, renderHtml } from "../bench/report/mod.ts";
import type { BenchRun } from "../bench/record/schema.ts";
import { STUDY_PLUGINS, STUDY_SECTIONS } from "../study/mod.ts";
import { needsTool, ROOT } from "./support.ts";
import { syntheticConcurrency, syntheticRtt, withCpuAndRepeats } from "./synthetic_run.ts";
import { answerLines } from "../bench/report/answer.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = `${ROOT}/build/artifacts`;
const skip = needsTool("chromium", "chromium");

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** RGB of each transport's colour in the report. */
const TRANSPORT_RGB: Record<string, [number, number, number]> = {
  "h2c": [0x1f, 0x77, 0xb4],
  "h2-tls": [0xff, 0x7f, 0x0e],
  "h3": [0x2c, 0xa0, 0x2c],
};

interface PageReport {
  /** Text of the answer section, when there is one. */
  answer: string;
  /** Per canvas: pixels that are neither transparent nor white. */
  inked: Record<string, number>;
  /** What the page says it drew: canvas id, datasets, non-null points. */
  charts: { id: string; datasets: number; points: number }[];
  canvases: number;
  /** Per canvas: how many pixels of each transport colour it has. */
  colorHits: Record<string, Record<string, number>>;
  errors: string[];
  blocked: string[];
}

/** Opens `html` (written to `path`) in Chromium and reads back what rendered. */
async function inspect(path: string, html: string, screenshot?: string): Promise<PageReport> {
  await Deno.writeTextFile(path, html);
  const userDataDir = await Deno.makeTempDir({ prefix: "sbilab-chromium-" });
  const browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1400, height: 900 },
    timeout: 60_000,
  });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    const blocked: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
    });
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith("file:")) return route.continue();
      blocked.push(url);
      return route.abort();
    });
    await page.goto(`file://${path}`, { timeout: 30_000 });
    const result = await page.evaluate((rgb) => {
      const g = globalThis as unknown as {
        sbilabCharts?: PageReport["charts"];
        document: {
          querySelectorAll(s: string): ArrayLike<{
            id: string;
            width: number;
            height: number;
            getContext(k: string): { getImageData(...a: number[]): { data: Uint8ClampedArray } };
          }>;
        };
      };
      const canvases = Array.from(g.document.querySelectorAll("canvas"));
      const colorHits: Record<string, Record<string, number>> = {};
      const inked: Record<string, number> = {};
      for (const c of canvases) {
        const data = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
        let ink = 0;
        for (let i = 0; i < data.length; i += 4) {
          if (data[i + 3] > 0 && !(data[i] > 250 && data[i + 1] > 250 && data[i + 2] > 250)) ink++;
        }
        inked[c.id] = ink;
        const hits: Record<string, number> = {};
        for (const [t, [r, gr, b]] of Object.entries(rgb)) {
          let n = 0;
          for (let i = 0; i < data.length; i += 4) {
            if (
              data[i + 3] > 200 && Math.abs(data[i] - r) < 6 && Math.abs(data[i + 1] - gr) < 6 &&
              Math.abs(data[i + 2] - b) < 6
            ) n++;
          }
          hits[t] = n;
        }
        colorHits[c.id] = hits;
      }
      const answer = (g.document as unknown as {
        getElementById(id: string): { textContent: string } | null;
      }).getElementById("answer")?.textContent ?? "";
      return { charts: g.sbilabCharts ?? [], canvases: canvases.length, colorHits, inked, answer };
    }, TRANSPORT_RGB);
    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true, timeout: 30_000 });
    return { ...result, errors, blocked };
  } finally {
    await browser.close();
    await Deno.remove(userDataDir, { recursive: true }).catch(() => {});
  }
}

let runPromise: Promise<{ run: BenchRun; lib: ChartLibrary }> | undefined;
/** A real flows run (in process, every available transport, two UE levels) and the library. */
function flowsRun() {
  return runPromise ??= (async () => ({
    run: await runBench({
      scenario: "flows",
      inProcess: true,
      skipFloors: true,
      warmupMs: 100,
      sampleMs: 400,
      concurrency: [2, 4],
      plugins: STUDY_PLUGINS,
    }),
    lib: await loadChartLibrary(),
  }))();
}

Deno.test({
  name:
    "the HTML report renders every chart with data in headless Chromium, offline and without console errors",
  ignore: skip,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { run, lib } = await flowsRun();
    const html = renderHtml(run, lib, { sections: STUDY_SECTIONS });
    assert.doesNotMatch(html, /<script[^>]+src=|<link[^>]+href=/i, "no external resources");
    await Deno.mkdir(ARTIFACTS, { recursive: true });
    const shot = `${ARTIFACTS}/report.png`;
    await Deno.remove(shot).catch(() => {});
    const page = await inspect(`${ARTIFACTS}/report.html`, html, shot);
    assert.deepEqual(page.errors, []);
    assert.deepEqual(page.blocked, []);
    const transports = run.config.transports;
    // Flow bars and CDFs per flow × UE level, one median chart, one curve per flow.
    const flows = new Set(run.rows.filter((r) => r.flow && !r.step).map((r) => r.flow)).size;
    assert.equal(page.canvases, page.charts.length);
    assert.equal(page.charts.filter((c) => c.id.startsWith("bars-")).length, flows * 2);
    assert.equal(page.charts.filter((c) => c.id.startsWith("cdf-")).length, flows * 2);
    assert.equal(page.charts.filter((c) => c.id.startsWith("ues-")).length, flows);
    assert.equal(page.charts.filter((c) => c.id === "medians").length, 1);
    for (const c of page.charts) assert.ok(c.points > 0, `${c.id} has no data points`);
    // Every transport's colour is drawn on every CDF, curve and flow-time bar chart (p99 bars).
    for (const c of page.charts.filter((c) => /^(cdf|ues|bars)-/.test(c.id))) {
      for (const t of transports) {
        assert.ok(
          page.colorHits[c.id][t] > 20,
          `${c.id}: no ${t} pixels (${page.colorHits[c.id][t]})`,
        );
      }
    }
    // The page opens with the verdict (its grid), not with a row's median; the percentile
    // plots show every transport.
    assert.ok(answerLines(run).length > 0);
    assert.equal(page.answer.trim(), "");
    assert.ok(/<h1>[^<]*<\/h1>\s*<section id="verdict">/.test(html), "the verdict opens the page");
    assert.ok(page.charts.some((c) => c.id.startsWith("pct-")));
    const size = (await Deno.stat(shot)).size;
    assert.ok(size > 20_000, `screenshot is only ${size} bytes`);
  },
});

/** Asserts the page opens with the run's answer and draws each expected chart in colour. */
async function checkKind(kind: string, run: BenchRun, expect: RegExp[]) {
  const lib = await loadChartLibrary();
  const html = renderHtml(run, lib);
  await Deno.mkdir(ARTIFACTS, { recursive: true });
  const shot = `${ARTIFACTS}/report-${kind}.png`;
  await Deno.remove(shot).catch(() => {});
  const page = await inspect(`${ARTIFACTS}/report-${kind}.html`, html, shot);
  assert.deepEqual(page.errors, []);
  assert.deepEqual(page.blocked, []);
  const answer = answerLines(run);
  assert.ok(answer.length > 0);
  assert.equal(page.answer.trim(), answer.join(""));
  for (const id of expect) {
    const c = page.charts.find((c) => id.test(c.id));
    assert.ok(c, `no chart ${id} among ${page.charts.map((c) => c.id).join(", ")}`);
    assert.ok(c.points > 0, `${c.id} has no data points`);
    assert.ok(page.inked[c.id] > 500, `${c.id} is blank (${page.inked[c.id]} inked pixels)`);
    const drawn = Object.values(page.colorHits[c.id]).filter((n) => n > 20).length;
    assert.ok(drawn >= 1, `${c.id}: no transport colour drawn`);
  }
  // Every chart on the page is drawn, not only the expected ones.
  assert.equal(page.canvases, page.charts.length);
  for (const c of page.charts) assert.ok(page.inked[c.id] > 500, `${c.id} is blank`);
  assert.ok((await Deno.stat(shot)).size > 20_000);
  return page;
}

Deno.test({
  name:
    "the HTML report of an rtt run with --runs opens with the answer and draws the ratios, percentiles, drift and CPU in Chromium",
  ignore: skip,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const run = withCpuAndRepeats(syntheticRtt(31));
    const page = await checkKind("rtt", run, [
      /^ratio-intervals$/,
      /^pct-/,
      /^drift-0$/,
      /^drift-1$/,
      /^cpu$/,
      /^medians$/,
    ]);
    assert.match(
      page.answer,
      /^h3 took \d\.\d\d× \[[\d.]+–[\d.]+\] per 256 B request.*; 3 runs agreed/,
    );
    // One interval and one ratio marker per run (3 runs × 2 datasets), and the range across runs.
    assert.equal(page.charts.find((c) => c.id === "ratio-intervals")!.datasets, 7);
    // Each transport at each size has its own percentile curve on one of two plots.
    assert.equal(page.charts.filter((c) => c.id.startsWith("pct-")).length, 2);
    for (const t of run.config.transports) assert.ok(page.colorHits["pct-0"][t] > 20, t);
  },
});

Deno.test({
  name:
    "the HTML report of a concurrency run opens with the req/s answer and draws p99 against req/s in Chromium",
  ignore: skip,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const run = syntheticConcurrency(32);
    const page = await checkKind("concurrency", run, [/^p99-rate$/, /^pct-/, /^concurrency$/]);
    assert.match(page.answer, /^At 64 in flight, h3 served 0\.\d\d× the requests per second/);
    const chart = page.charts.find((c) => c.id === "p99-rate")!;
    assert.equal(chart.datasets, 3);
    assert.equal(chart.points, 9);
    for (const t of run.config.transports) assert.ok(page.colorHits["p99-rate"][t] > 20, t);
  },
});

Deno.test({
  name: "the page check notices a report whose chart library is missing",
  ignore: skip,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { run } = await flowsRun();
    const broken = renderHtml(run, { name: "none", version: "0", source: "" }, {
      sections: STUDY_SECTIONS,
    });
    const dir = await Deno.makeTempDir({ prefix: "sbilab-html-" });
    try {
      const page = await inspect(`${dir}/broken.html`, broken);
      assert.ok(page.errors.some((e) => /Chart is not defined/.test(e)), page.errors.join("; "));
      assert.equal(page.charts.length, 0);
      for (const hits of Object.values(page.colorHits)) {
        assert.deepEqual(Object.values(hits).filter((n) => n > 0), []);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
