/**
 * The product's import graph layers: every relative import of a non-test
 * module runs from a higher folder to a lower one (or stays in its folder),
 * inside `bench/` from a higher room to a lower one, modules above `bench/`
 * reach it only through a `mod.ts`, and no module imports itself through
 * others. The graph comes from `deno info --json` over every product module,
 * type-only imports included.
 */
import assert from "node:assert/strict";
import { ROOT } from "../lib/host.ts";

/** The top-level folders, lowest first: a module may import only from its own floor or below. */
const FLOORS = [
  "lib",
  "handler",
  "transports",
  "linkemu",
  "load",
  "interop",
  "bench",
  "soak",
  "profile",
  "study",
  "cli",
  "main.ts",
  "scripts",
];

/**
 * The rooms inside `bench/`, lowest first: pure statistics, the saved record,
 * reports, the instruments, scenarios, the runner, then the public surface.
 */
const BENCH_ROOMS = ["stats", "record", "report", "measure", "scenarios", "run", "mod.ts"];

/**
 * The rooms that do no I/O: none of their modules names a `Deno` API, save
 * the ones listed (the reports' file writer and the chart library's reader).
 */
const PURE_ROOMS: Record<string, readonly string[]> = {
  stats: [],
  record: [],
  report: ["bench/report/reporters.ts", "bench/report/chart_library.ts"],
};

function isProduct(path: string): boolean {
  return path.endsWith(".ts") && !path.endsWith("_test.ts") && !path.endsWith("_test_util.ts") &&
    !path.startsWith("tests/") && !path.startsWith("node_modules/") && !path.startsWith("build/");
}

async function productFiles(): Promise<string[]> {
  const out = await new Deno.Command("git", {
    args: ["ls-files", "--cached", "--others", "--exclude-standard", "*.ts"],
    cwd: ROOT,
    stdout: "piped",
  }).output();
  assert.ok(out.success, "git ls-files failed");
  return new TextDecoder().decode(out.stdout).split("\n").filter(isProduct);
}

/** Module → the product modules it imports (paths relative to the repository root). */
async function importGraph(): Promise<Map<string, Set<string>>> {
  const files = await productFiles();
  const dir = await Deno.makeTempDir({ prefix: "sbilab-layers-" });
  try {
    const entry = `${dir}/all.ts`;
    await Deno.writeTextFile(
      entry,
      files.map((f) => `import ${JSON.stringify(`file://${ROOT}/${f}`)};`).join("\n"),
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
      modules: {
        specifier: string;
        dependencies?: { code?: { specifier: string }; type?: { specifier: string } }[];
      }[];
    };
    const prefix = `file://${ROOT}/`;
    const rel = (s: string) => s.startsWith(prefix) ? decodeURI(s.slice(prefix.length)) : undefined;
    const graph = new Map<string, Set<string>>();
    for (const m of info.modules) {
      const from = rel(m.specifier);
      if (!from || !isProduct(from)) continue;
      const to = new Set<string>();
      for (const d of m.dependencies ?? []) {
        for (const s of [d.code?.specifier, d.type?.specifier]) {
          const t = s && rel(s);
          if (t && isProduct(t)) to.add(t);
        }
      }
      graph.set(from, to);
    }
    return graph;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function floorOf(path: string): number {
  const top = path.split("/")[0];
  const i = FLOORS.indexOf(top);
  if (i < 0) throw new Error(`${path} is in no floor (add its folder to FLOORS)`);
  return i;
}

function roomOf(path: string): number {
  const room = path.split("/")[1];
  const i = BENCH_ROOMS.indexOf(room);
  if (i < 0) throw new Error(`${path} is in no room of bench/ (add it to BENCH_ROOMS)`);
  return i;
}

/** The edges of `graph` that run upward by `level` (a higher level imported from a lower one). */
function upward(
  graph: Map<string, Set<string>>,
  level: (path: string) => number,
  within: (path: string) => boolean = () => true,
): string[] {
  const found: string[] = [];
  for (const [from, tos] of graph) {
    if (!within(from)) continue;
    for (const to of tos) {
      if (within(to) && level(to) > level(from)) found.push(`${from} -> ${to}`);
    }
  }
  return found;
}

const inBench = (path: string) => path.startsWith("bench/");

/** Imports into `bench/` from outside it that name an inner file rather than a `mod.ts`. */
function pastTheSurface(graph: Map<string, Set<string>>): string[] {
  const found: string[] = [];
  for (const [from, tos] of graph) {
    if (inBench(from)) continue;
    for (const to of tos) {
      if (inBench(to) && !to.endsWith("/mod.ts")) found.push(`${from} -> ${to}`);
    }
  }
  return found;
}

/** The strongly connected components with more than one module (Tarjan). */
function cycles(graph: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || graph.get(v)?.has(v)) found.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const graph = await importGraph();

Deno.test("the import graph covers the product's modules", () => {
  for (const f of ["main.ts", "handler/handler.ts", "transports/types.ts", "lib/host.ts"]) {
    assert.ok(graph.has(f), `${f} missing from the graph`);
  }
  assert.ok(graph.get("main.ts")!.size > 3, "main.ts imports nothing the graph saw");
});

Deno.test("every import runs from a higher folder to a lower one or within a folder", () => {
  const up = upward(graph, floorOf);
  assert.deepEqual(up, [], `imports that run upward:\n${up.join("\n")}`);
});

Deno.test("inside bench/, every import runs from a higher room to a lower one or within a room", () => {
  const rooms = new Set([...graph.keys()].filter(inBench).map((p) => p.split("/")[1]));
  assert.ok(rooms.has("stats") && rooms.has("run"), `bench/'s rooms missing: ${[...rooms]}`);
  const up = upward(graph, roomOf, inBench);
  assert.deepEqual(up, [], `imports between bench/'s rooms that run upward:\n${up.join("\n")}`);
});

Deno.test("modules outside bench/ reach it only through its mod.ts or a room's", () => {
  const inner = pastTheSurface(graph);
  assert.deepEqual(inner, [], `imports of bench/'s inner files:\n${inner.join("\n")}`);
});

Deno.test("bench/'s pure rooms name no Deno API, the reports only to write files and read Chart.js", async () => {
  const impure: string[] = [];
  for (const path of graph.keys()) {
    const allowed = inBench(path) ? PURE_ROOMS[path.split("/")[1]] : undefined;
    if (!allowed || allowed.includes(path)) continue;
    const text = await Deno.readTextFile(`${ROOT}/${path}`);
    if (/\bDeno\./.test(text)) impure.push(path);
  }
  for (const room of Object.keys(PURE_ROOMS)) {
    assert.ok([...graph.keys()].some((p) => p.startsWith(`bench/${room}/`)), `no bench/${room}/`);
  }
  assert.deepEqual(impure, [], `modules of a pure room that use Deno:\n${impure.join("\n")}`);
});

Deno.test("the layer checks find an upward import between rooms and an inner import from above", () => {
  const planted = new Map([
    ["bench/stats/stats.ts", new Set(["bench/run/run_bench.ts"])],
    ["bench/run/run_bench.ts", new Set(["bench/stats/stats.ts"])],
    ["study/study.ts", new Set(["bench/run/run_bench.ts", "bench/mod.ts", "bench/run/mod.ts"])],
  ]);
  assert.deepEqual(upward(planted, roomOf, inBench), [
    "bench/stats/stats.ts -> bench/run/run_bench.ts",
  ]);
  assert.deepEqual(pastTheSurface(planted), ["study/study.ts -> bench/run/run_bench.ts"]);
});

Deno.test("no module imports itself through others", () => {
  const loops = cycles(graph);
  assert.deepEqual(loops, [], `import loops:\n${loops.map((c) => c.join(" <-> ")).join("\n")}`);
});

Deno.test("the cycle finder finds a loop and passes a chain", () => {
  const loop = new Map([["a", new Set(["b"])], ["b", new Set(["c"])], ["c", new Set(["a"])]]);
  assert.deepEqual(cycles(loop), [["a", "b", "c"]]);
  const chain = new Map([["a", new Set(["b"])], ["b", new Set(["c"])], ["c", new Set<string>()]]);
  assert.deepEqual(cycles(chain), []);
});
