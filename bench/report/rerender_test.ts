/**
 * Saved run records re-render the reports they rendered when they were saved,
 * byte for byte: the records and their Markdown, CSV, HTML, terminal and
 * comparison renders in `testdata/` were written by an earlier version of the
 * reporters, so a change to a reporter's output shows here first. After a
 * deliberate change to a report, write the renders anew and review the diff.
 */
import assert from "node:assert/strict";
import {
  type BenchRun,
  type ChartLibrary,
  compareRuns,
  parseRun,
  renderCharts,
  renderComparison,
  renderCsv,
  renderHtml,
  renderMarkdown,
  renderTable,
} from "../mod.ts";

const DIR = new URL("./testdata/", import.meta.url);
/** A stand-in for the chart library, so the HTML fixture stays small. */
const LIB: ChartLibrary = { name: "chart-stub", version: "0", source: "/* the chart library */" };

async function saved(name: string): Promise<BenchRun> {
  return parseRun(await Deno.readTextFile(new URL(`${name}.json`, DIR)));
}

async function expected(file: string): Promise<string> {
  return await Deno.readTextFile(new URL(file, DIR));
}

for (const name of ["rtt_run", "cold_run"]) {
  Deno.test(`the saved ${name} record re-renders its Markdown, CSV, HTML and terminal reports unchanged`, async () => {
    const run = await saved(name);
    assert.equal(renderMarkdown(run), await expected(`${name}.md`));
    assert.equal(renderCsv(run), await expected(`${name}.csv`));
    assert.equal(renderHtml(run, LIB), await expected(`${name}.html`));
    assert.equal(
      renderTable(run) + "\n\n" + renderCharts(run) + "\n",
      await expected(`${name}.txt`),
    );
  });
}

Deno.test("two saved rtt records re-render their comparison unchanged", async () => {
  const cmp = compareRuns(await saved("rtt_run"), await saved("rtt_run_again"));
  assert.equal(renderComparison(cmp) + "\n", await expected("rtt_comparison.txt"));
});
