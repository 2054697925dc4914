import assert from "node:assert/strict";
import { type BenchRun, type ChartLibrary, parseRun, renderHtml } from "../mod.ts";

const LIB: ChartLibrary = { name: "chart-stub", version: "0", source: "/* the chart library */" };

async function rttRun(): Promise<BenchRun> {
  return parseRun(await Deno.readTextFile(new URL("./testdata/rtt_run.json", import.meta.url)));
}

function meta(html: string): string {
  const m = html.match(/<p class="meta">([^<]*)<\/p>/);
  assert.ok(m, "the report has a meta line");
  return m[1];
}

Deno.test("the HTML report's meta line says a study's time against its budget in the one budget sentence", async () => {
  const run = await rttRun();
  const study = (durationMs: number): BenchRun => ({
    ...run,
    durationMs,
    study: {
      links: [],
      budgetMs: 900_000,
      elapsedMs: durationMs,
      sampleMs: 30_000,
      samples: 2400,
      rule: { minReduction: 0.2, level: 0.95, resamples: 1000, minSamples: 600 },
    },
  });
  assert.match(
    meta(renderHtml(study(931_200), LIB)),
    /^Run [^,]+, took 931 s, over its 900 s budget, at most 2400 flows per side in a cell; /,
  );
  assert.match(
    meta(renderHtml(study(796_400), LIB)),
    /^Run [^,]+, took 796 s of a 900 s budget, at most 2400 flows per side in a cell; /,
  );
  // A run without a budget keeps its duration to a tenth of a second.
  assert.match(
    meta(renderHtml(run, LIB)),
    new RegExp(`^Run [^,]+, ${(run.durationMs / 1000).toFixed(1)} s; `),
  );
});
