/**
 * The h3 module's C files call each other one way only (the order sbh3_int.h
 * states): read from the sources, a call from one file to a function another
 * file defines is an edge, and the edges have no loop.
 */
import assert from "node:assert/strict";

const DIR = new URL("./native/", import.meta.url);

/** Source of every `sbh3_*.c`, comments removed, by file name. */
async function sources(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const e of Deno.readDir(DIR)) {
    if (!/^sbh3_\w+\.c$/.test(e.name)) continue;
    const text = await Deno.readTextFile(new URL(e.name, DIR));
    out.set(e.name, text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, ""));
  }
  return out;
}

/** Edges `from -> to` with the functions `from` calls that `to` defines (non-static ones). */
function callEdges(src: Map<string, string>): Map<string, Map<string, string[]>> {
  const owner = new Map<string, string>();
  for (const [file, text] of src) {
    for (const m of text.matchAll(/^(?!static\b)[A-Za-z_][\w \t*]*?\b(\w+)\s*\([^;{]*\)\s*\{/gm)) {
      owner.set(m[1], file);
    }
  }
  const edges = new Map<string, Map<string, string[]>>();
  for (const [file, text] of src) {
    const to = new Map<string, string[]>();
    for (const [fn, def] of owner) {
      if (def === file || !new RegExp(`\\b${fn}\\b`).test(text)) continue;
      to.set(def, [...(to.get(def) ?? []), fn]);
    }
    edges.set(file, to);
  }
  return edges;
}

/** A loop of files, or null. */
function findLoop(edges: Map<string, Map<string, string[]>>): string[] | null {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (f: string): string[] | null => {
    if (state.get(f) === "done") return null;
    if (state.get(f) === "open") return [...path.slice(path.indexOf(f)), f];
    state.set(f, "open");
    path.push(f);
    for (const next of edges.get(f)?.keys() ?? []) {
      const loop = visit(next);
      if (loop) return loop;
    }
    path.pop();
    state.set(f, "done");
    return null;
  };
  for (const f of edges.keys()) {
    const loop = visit(f);
    if (loop) return loop;
  }
  return null;
}

Deno.test("h3 C files call each other one way, as sbh3_int.h states", async () => {
  const src = await sources();
  assert.ok(src.size >= 6, `expected the six sbh3_*.c files, found ${[...src.keys()]}`);
  const edges = callEdges(src);
  const loop = findLoop(edges);
  const calls = loop?.slice(1).map((to, i) =>
    `${loop[i]} -> ${to}: ${edges.get(loop[i])!.get(to)}`
  );
  assert.equal(loop, null, `call loop: ${calls?.join("; ")}`);
  // the layers the header names: nothing below conn calls conn, nothing calls udp
  const callers = (to: string) => [...edges].filter(([, t]) => t.has(to)).map(([f]) => f).sort();
  assert.deepEqual(callers("sbh3_udp.c"), []);
  assert.deepEqual(callers("sbh3_conn.c"), ["sbh3_client.c", "sbh3_server.c", "sbh3_udp.c"]);
  assert.deepEqual([...edges.get("sbh3_common.c")!.keys()], []);
});

Deno.test("the loop finder finds a loop of files and passes a chain", () => {
  const e = (pairs: [string, string][]) => {
    const m = new Map<string, Map<string, string[]>>();
    for (const [a, b] of pairs) {
      if (!m.has(a)) m.set(a, new Map());
      if (!m.has(b)) m.set(b, new Map());
      m.get(a)!.set(b, ["f"]);
    }
    return m;
  };
  assert.deepEqual(findLoop(e([["a", "b"], ["b", "c"], ["c", "a"]])), ["a", "b", "c", "a"]);
  assert.equal(findLoop(e([["a", "b"], ["b", "c"], ["a", "c"]])), null);
});
