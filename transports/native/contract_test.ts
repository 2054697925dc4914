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
