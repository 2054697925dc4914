/**
 * The product's import graph layers: every relative import of a non-test
 * module runs from a higher folder to a lower one (or stays in its folder),
 * and no module imports itself through others. The graph comes from
 * `deno info --json` over every product module, type-only imports included.
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
  "study",
  "cli",
  "main.ts",
  "scripts",
];

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
  const upward: string[] = [];
  for (const [from, tos] of graph) {
    for (const to of tos) {
      if (floorOf(to) > floorOf(from)) upward.push(`${from} -> ${to}`);
    }
  }
  assert.deepEqual(upward, [], `imports that run upward:\n${upward.join("\n")}`);
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
