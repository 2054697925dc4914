/**
 * The one C contract of the native modules (sbwire.h), checked over every
 * header: one error enum (every negative return code of every module and of
 * the load engine is a member of enum sbwire_error, and TypeScript's
 * NATIVE_ERR is the only table of them; the scanners are tested on a planted
 * second enum, so a copy cannot slip past them) and one meaning per verb.
 */
import assert from "node:assert/strict";
import { ROOT } from "../../lib/host.ts";
import { NATIVE_ERR } from "./errors.ts";

/** Where native code and its TypeScript callers live (build outputs and dependencies excluded). */
const C_DIRS = ["transports", "load", "bench/native", "linkemu/native", "fuzz"];
const TS_DIRS = ["transports", "load", "lib", "cli", "bench", "interop", "study", "linkemu"];

async function* files(dir: string, ext: RegExp): AsyncGenerator<string> {
  for await (const e of Deno.readDir(`${ROOT}/${dir}`)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) yield* files(path, ext);
    else if (ext.test(e.name)) yield path;
  }
}

/** The enumerators with a negative value in C text, with the enum each belongs to. */
function negativeEnumerators(text: string): { enumName: string; name: string; value: number }[] {
  const out: { enumName: string; name: string; value: number }[] = [];
  for (const m of text.matchAll(/enum\s+(\w*)\s*\{([^}]*)\}/g)) {
    for (const v of m[2].matchAll(/\b([A-Z][A-Z0-9_]*)\s*=\s*(-\s*\d+)/g)) {
      out.push({ enumName: m[1], name: v[1], value: Number(v[2].replace(/\s/g, "")) });
    }
  }
  return out;
}

/** Keys of TypeScript object literals that map a DONE-like name to a negative number (a code table). */
function negativeCodeTables(text: string): string[] {
  return [...text.matchAll(/\b([A-Z][A-Z0-9_]*)\s*:\s*(-\d+)\s*,/g)].map((m) => `${m[1]}: ${m[2]}`);
}

/** Problems: a negative enumerator outside sbwire_error, or one whose value sbwire_error gives another name. */
function cProblems(path: string, text: string): string[] {
  const byValue = new Map(Object.entries(NATIVE_ERR).map(([k, v]) => [v as number, k]));
  return negativeEnumerators(text).flatMap(({ enumName, name, value }) => {
    if (enumName !== "sbwire_error") return [`${path}: enum ${enumName} has ${name} = ${value}`];
    if (name !== `SBWIRE_ERR_${byValue.get(value)}`) return [`${path}: ${name} = ${value}`];
    return [];
  });
}

Deno.test("the scanners find a planted second error enum in C and a second code table in TypeScript", () => {
  const planted =
    "enum sbl_error {\n  SBL_ERR_DONE = -1,\n  SBL_ERR_STATE = -5, /* started twice */\n};";
  assert.deepEqual(cProblems("planted.h", planted), [
    "planted.h: enum sbl_error has SBL_ERR_DONE = -1",
    "planted.h: enum sbl_error has SBL_ERR_STATE = -5",
  ]);
  // A value of the one enum under another meaning is caught too.
  assert.deepEqual(cProblems("planted.h", "enum sbwire_error { SBWIRE_ERR_STATE = -5 };"), [
    "planted.h: SBWIRE_ERR_STATE = -5",
  ]);
  assert.deepEqual(negativeCodeTables("export const X = { DONE: -1, STATE: -5, ok: 1 };"), [
    "DONE: -1",
    "STATE: -5",
  ]);
});

Deno.test("every negative return code of the native modules and the load engine is one of sbwire_error's", async () => {
  const problems: string[] = [];
  let scanned = 0;
  for (const dir of C_DIRS) {
    for await (const path of files(dir, /\.(c|h)$/)) {
      problems.push(...cProblems(path, await Deno.readTextFile(`${ROOT}/${path}`)));
      scanned++;
    }
  }
  assert.ok(scanned >= 30, `only ${scanned} C files found`);
  assert.deepEqual(problems, []);
});

Deno.test("TypeScript holds one table of native return codes: NATIVE_ERR", async () => {
  const tables: string[] = [];
  for (const dir of TS_DIRS) {
    for await (const path of files(dir, /\.ts$/)) {
      if (path === "transports/native/errors.ts" || path.endsWith("_test.ts")) continue;
      const found = negativeCodeTables(await Deno.readTextFile(`${ROOT}/${path}`));
      if (found.length) tables.push(`${path}: ${found.join(", ")}`);
    }
  }
  assert.deepEqual(tables, []);
});

/** The public headers of the modules: every function a TypeScript symbol table may name. */
const MODULE_HEADERS = [
  "transports/h2/native/sbh2.h",
  "transports/h2/native/sbh2_server.h",
  "transports/h2/native/sbh2_tls.h",
  "transports/h3/native/sbh3.h",
  "transports/deno/native/sbdh3.h",
  "load/native/sbl_load.h",
  "transports/native/sbloop.h",
];

/** Prototypes in C text: return type and name. */
function prototypes(text: string): { result: string; name: string }[] {
  return [...text.matchAll(/^([a-z][\w ]*?\*?)\s*\b(sb\w+)\(/gm)].map((m) => ({
    result: m[1].trim(),
    name: m[2],
  }));
}

Deno.test("every module's verbs mean one thing: _free returns nothing, _shutdown a code, no _close", async () => {
  const wrong: string[] = [];
  let free = 0, shutdown = 0;
  for (const path of MODULE_HEADERS) {
    for (const { result, name } of prototypes(await Deno.readTextFile(`${ROOT}/${path}`))) {
      if (name.endsWith("_free")) {
        free++;
        if (result !== "void") wrong.push(`${name} returns ${result}`);
      }
      if (name.endsWith("_shutdown")) {
        shutdown++;
        if (result !== "int") wrong.push(`${name} returns ${result}`);
      }
      if (/_close$/.test(name)) {
        wrong.push(`${name}: a graceful close is _shutdown, freeing is _free`);
      }
    }
  }
  assert.ok(free >= 8 && shutdown >= 4, `found ${free} _free and ${shutdown} _shutdown functions`);
  assert.deepEqual(wrong, []);
});

/** Whitespace-normalised prototypes of C text, comments dropped: `int f(T *a, U b)`. */
function fullPrototypes(text: string): Map<string, string> {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "");
  const out = new Map<string, string>();
  for (const m of code.matchAll(/^[a-z][\w ]*?\*?\s*\b(sb\w+)\([^;]*\);/gm)) {
    out.set(m[1], m[0].replace(/\s+/g, " ").replace(/\( /g, "(").replace(/ \);$/, ");"));
  }
  return out;
}

/**
 * The entries of a symbol table with the C prototype in the comment above
 * each (`// …;` on one or more lines, a note after the `;` allowed, or
 * `/** … *\/`).
 */
function tableEntries(text: string): { name: string; comment: string | undefined }[] {
  const out: { name: string; comment: string | undefined }[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const entry = /^ {2}(sb\w+): \{/.exec(lines[i]);
    if (!entry) continue;
    const doc = /^\s*\/\*\* (.*) \*\/\s*$/.exec(lines[i - 1] ?? "");
    let comment = doc ? `${doc[1]};` : undefined;
    if (!doc) {
      const parts: string[] = [];
      for (let j = i - 1; j >= 0 && /^\s*\/\/ /.test(lines[j]); j--) {
        parts.unshift(lines[j].replace(/^\s*\/\/ /, ""));
        if (/^[a-z][\w ]*?\*?\s*\bsb\w+\(/.test(parts[0])) break;
      }
      const joined = parts.join(" ");
      if (/\bsb\w+\(/.test(joined)) comment = joined.slice(0, joined.indexOf(";") + 1);
    }
    out.push({ name: entry[1], comment });
  }
  return out;
}

/** Symbol tables whose every entry names a function of `MODULE_HEADERS` with its prototype as a comment. */
const SYMBOL_TABLES = [
  "transports/h2/symbols.ts",
  "transports/h3/symbols.ts",
  "transports/deno/h3_symbols.ts",
  "transports/native/io_loop_symbols.ts",
];

Deno.test("every symbol table entry carries its header's prototype word for word", async () => {
  const headers = new Map<string, string>();
  for (const path of MODULE_HEADERS) {
    for (const [name, proto] of fullPrototypes(await Deno.readTextFile(`${ROOT}/${path}`))) {
      headers.set(name, proto);
    }
  }
  const wrong: string[] = [];
  let entries = 0;
  for (const path of SYMBOL_TABLES) {
    for (const { name, comment } of tableEntries(await Deno.readTextFile(`${ROOT}/${path}`))) {
      entries++;
      if (comment === undefined) wrong.push(`${path}: ${name} has no prototype comment`);
      else if (headers.get(name) !== comment.replace(/\s+/g, " ")) {
        wrong.push(`${path}: ${name}: "${comment}" is not the header's "${headers.get(name)}"`);
      }
    }
  }
  assert.ok(entries >= 120, `only ${entries} symbol table entries found`);
  assert.deepEqual(wrong, []);
});

/** Setters off the one configuration style of sbwire.h: one per option, returning int, no option code. */
function setterProblems(text: string): string[] {
  return [...fullPrototypes(text).entries()].flatMap(([name, proto]) => {
    if (/_set$/.test(name)) return [`${name}: one setter per option (<object>_set_<option>)`];
    if (/_set_\w+$/.test(name) && !proto.startsWith("int ")) return [`${name} does not return int`];
    return [];
  });
}

Deno.test("configuration has one setter style: <prefix>_<object>_set_<option>, returning int", async () => {
  assert.deepEqual(
    setterProblems(
      "int sbx_server_set(sbx_server *s, int option, uint64_t v);\nvoid sbx_conn_set_window(sbx_conn *c, uint32_t n);",
    ),
    [
      "sbx_server_set: one setter per option (<object>_set_<option>)",
      "sbx_conn_set_window does not return int",
    ],
  );
  const wrong: string[] = [];
  let setters = 0;
  for (const path of MODULE_HEADERS) {
    const text = await Deno.readTextFile(`${ROOT}/${path}`);
    setters += [...fullPrototypes(text).keys()].filter((n) => /_set_\w+$/.test(n)).length;
    wrong.push(...setterProblems(text).map((p) => `${path}: ${p}`));
  }
  assert.ok(setters >= 30, `only ${setters} setters found`);
  assert.deepEqual(wrong, []);
});
