/**
 * The chart library the HTML report inlines: Chart.js's UMD build, read from
 * node_modules when a report is written (the one read of a file in this room
 * besides the reporters' writes).
 */

/** A chart library's browser build, to be inlined. */
export interface ChartLibrary {
  name: string;
  version: string;
  /** The UMD bundle's source text. */
  source: string;
}

/** Reads Chart.js's UMD build from node_modules; throws with a one-line hint when missing. */
export async function loadChartLibrary(): Promise<ChartLibrary> {
  // Importing the package makes Deno install it on first use (nodeModulesDir "auto").
  try {
    await import("chart.js");
  } catch {
    // The ESM entry may not evaluate outside a browser; the file below is what is needed.
  }
  const entry = new URL(import.meta.resolve("chart.js"));
  const dist = new URL("./chart.umd.min.js", entry);
  const pkg = new URL("../package.json", entry);
  try {
    const [source, meta] = await Promise.all([
      Deno.readTextFile(dist),
      Deno.readTextFile(pkg).then((t) => JSON.parse(t) as { version: string }),
    ]);
    return { name: "Chart.js", version: meta.version, source };
  } catch (err) {
    throw new Error(
      `Cannot read Chart.js from ${dist.pathname} (${(err as Error).message}); run deno install`,
      { cause: err },
    );
  }
}
