/**
 * Instructions per request from two callgrind runs of the same process that
 * differ only in how many requests (or round trips) it handled: everything
 * both runs share (start-up, warm-up, connection set-up, shut-down) cancels,
 * and what is left, divided by the difference in requests, is one request's
 * instructions, per object file (the runtime binary, V8's generated code, the
 * sbilab module, nghttp2, GnuTLS, libc, ...) and per part (C code, libc, the
 * Deno binary, JIT code). Pure functions over `callgrind_annotate` text, and
 * {@linkcode readCallgrindFile}, which runs it: the one reader of callgrind's
 * files (`lab profile --callgrind` and the wake-up probe).
 */

/** The object name V8's generated code (and any code in no object file) is filed under. */
export const JIT_OBJECT = "???";

/**
 * Instructions (Ir) per object file from `callgrind_annotate --threshold=100
 * --auto=no` text, by file name without its folder. A row without an object
 * (code inlined from another source file) counts for the object its function
 * is listed with elsewhere (recursion marks like `'2` ignored), else for the
 * object its source file is listed with, else for `(no object)`; code in no object file (`[???]`: V8's generated code, JIT)
 * counts as {@linkcode JIT_OBJECT}; what the listing left out, as
 * `(below threshold)`.
 * @throws {SyntaxError} when the text has no `PROGRAM TOTALS` line
 */
export function parseAnnotate(text: string): Map<string, number> {
  const line = /^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?)(?:\s+\[([^\]]+)\])?\s*$/;
  const rows: { ir: number; file: string; fn: string; object?: string }[] = [];
  let total = 0;
  for (const l of text.split("\n")) {
    const m = line.exec(l);
    if (!m) continue;
    const ir = Number(m[1].replaceAll(",", ""));
    if (m[2] === "PROGRAM TOTALS") {
      total = ir;
      continue;
    }
    const colon = m[2].indexOf(":");
    const fn = m[2].slice(colon + 1).replace(/'\d+$/, "");
    rows.push({ ir, file: m[2].slice(0, colon), fn, object: m[3]?.replace(/^.*\//, "") });
  }
  if (!total) throw new SyntaxError("No PROGRAM TOTALS line in the callgrind_annotate output");
  const fnHome = new Map<string, string>(), fileHome = new Map<string, string>();
  for (const r of rows) {
    if (!r.object || r.object === JIT_OBJECT) continue;
    if (!fnHome.has(r.fn)) fnHome.set(r.fn, r.object);
    if (r.file !== "???" && !fileHome.has(r.file)) fileHome.set(r.file, r.object);
  }
  const out = new Map<string, number>();
  let listed = 0;
  for (const r of rows) {
    const object = r.object ?? fnHome.get(r.fn) ?? fileHome.get(r.file) ?? "(no object)";
    out.set(object, (out.get(object) ?? 0) + r.ir);
    listed += r.ir;
  }
  if (total > listed) out.set("(below threshold)", total - listed);
  return out;
}

/**
 * Instructions per object file of one callgrind output file, through
 * `callgrind_annotate` and {@linkcode parseAnnotate}.
 * @throws {Error} when callgrind_annotate fails (no such file, a run that wrote none)
 */
export async function readCallgrindFile(file: string): Promise<Map<string, number>> {
  const ann = await new Deno.Command("callgrind_annotate", {
    // --auto=no: the annotated source lines that would follow match as more rows.
    args: ["--threshold=100", "--auto=no", file],
    stdout: "piped",
    stderr: "null",
  }).output();
  if (!ann.success) throw new Error(`callgrind_annotate failed on ${file}`);
  return parseAnnotate(new TextDecoder().decode(ann.stdout));
}

/**
 * Instructions per unit by object: (`large` − `small`) ÷ (`largeN` −
 * `smallN`), every object of either run.
 * @throws {RangeError} unless `largeN` > `smallN`
 */
export function perUnitByObject(
  small: Map<string, number>,
  smallN: number,
  large: Map<string, number>,
  largeN: number,
): Map<string, number> {
  if (!(largeN > smallN)) throw new RangeError("The larger run must send more requests");
  const out = new Map<string, number>();
  for (const object of new Set([...small.keys(), ...large.keys()])) {
    out.set(object, ((large.get(object) ?? 0) - (small.get(object) ?? 0)) / (largeN - smallN));
  }
  return out;
}

/** One object's instructions per request. */
export interface ObjectCost {
  object: string;
  perRequest: number;
}

/**
 * Instructions per request by object: {@linkcode perUnitByObject}, largest
 * first; objects under 0.5 % of the total are summed into one row.
 */
export function perRequestByObject(
  small: Map<string, number>,
  smallN: number,
  large: Map<string, number>,
  largeN: number,
): ObjectCost[] {
  return objectRows(perUnitByObject(small, smallN, large, largeN));
}

/** Rows of instructions per request by object, largest first; objects under 0.5 % of the total in one row. */
export function objectRows(perObject: Map<string, number>): ObjectCost[] {
  const rows = [...perObject].map(([object, perRequest]) => ({ object, perRequest }));
  const total = rows.reduce((s, r) => s + r.perRequest, 0);
  const big = rows.filter((r) => Math.abs(r.perRequest) >= 0.005 * total);
  const rest = rows.filter((r) => !big.includes(r)).reduce((s, r) => s + r.perRequest, 0);
  big.sort((a, b) => b.perRequest - a.perRequest);
  if (rest) big.push({ object: "(other objects)", perRequest: rest });
  return big;
}

/**
 * What a process's instructions are spent in: `native`, the C code (an
 * sbilab module `libsbilab_*.so`, a C program such as nghttpd or h2load, and
 * their libraries: nghttp2, ngtcp2, nghttp3, GnuTLS, OpenSSL, ...); `libc`,
 * the C library and loader every part calls; `runtime`, the Deno binary (V8's
 * runtime and compiler, Deno's ops, the garbage collector); `jit`, V8's
 * generated code (JavaScript); `other`, what no object claims.
 */
export const PARTS = ["native", "libc", "runtime", "jit", "other"] as const;
/** One of {@linkcode PARTS}. */
export type Part = typeof PARTS[number];

/** Column titles of the parts. */
export const PART_TITLES: Record<Part, string> = {
  native: "C (module/program + libs)",
  libc: "libc + ld.so",
  runtime: "Deno binary",
  jit: "JIT code",
  other: "other",
};

/** The system's C runtime: libc and its companions, and the dynamic loader. */
const LIBC = /^(libc|libm|libpthread|librt|libdl|libgcc_s|ld-linux[\w-]*)\.so\b/;

/** The part an object file (as {@linkcode parseAnnotate} names it) belongs to. */
export function partOf(object: string): Part {
  if (object === "deno") return "runtime";
  if (object === JIT_OBJECT) return "jit";
  if (LIBC.test(object)) return "libc";
  if (object.startsWith("(") || object.startsWith("vgpreload_")) return "other";
  return "native";
}

/** Instructions per part (and their total) from instructions per object. */
export function byPart(
  perObject: Iterable<[string, number]>,
): Record<Part, number> & { total: number } {
  const out = { native: 0, libc: 0, runtime: 0, jit: 0, other: 0, total: 0 };
  for (const [object, n] of perObject) {
    out[partOf(object)] += n;
    out.total += n;
  }
  return out;
}

const count = (n: number) => (Math.round(n) + 0).toLocaleString("en"); // + 0: no "-0"

/** The table: object, instructions per request, share. */
export function renderObjectCosts(title: string, rows: ObjectCost[]): string {
  const total = rows.reduce((s, r) => s + r.perRequest, 0);
  const width = Math.max(6, ...rows.map((r) => r.object.length));
  return [
    `${title}: ${count(total)} instructions per request`,
    `${"object".padEnd(width)}  ${"instr/request".padStart(13)}  share`,
    ...rows.map((r) =>
      `${r.object.padEnd(width)}  ${count(r.perRequest).padStart(13)}  ${
        (r.perRequest / total * 100).toFixed(1).padStart(5)
      } %`
    ),
  ].join("\n");
}

/** One process's instructions per request by part (from {@linkcode perUnitByObject}), a row per part. */
export function renderPartCosts(perObject: Map<string, number>): string {
  const parts = byPart(perObject);
  const width = Math.max(...PARTS.map((p) => PART_TITLES[p].length));
  return [
    `${"part".padEnd(width)}  ${"instr/request".padStart(13)}  share`,
    ...PARTS.map((p) =>
      `${PART_TITLES[p].padEnd(width)}  ${count(parts[p]).padStart(13)}  ${
        (parts.total ? parts[p] / parts.total * 100 : 0).toFixed(1).padStart(5)
      } %`
    ),
  ].join("\n");
}

/** One process's instructions per request in a {@linkcode CallgrindRun}. */
export interface CallgrindSide {
  /** `client` or `server`. */
  side: "client" | "server";
  /** What ran: `sbilab`, `nghttpd`, `h2load`, ... */
  name: string;
  /** Instructions per request by object file. */
  perObject: Record<string, number>;
  /** The same by part, with their total. */
  parts: Record<Part, number> & { total: number };
}

/** `lab profile --callgrind --json`'s record (`sbilab-callgrind/1`). */
export interface CallgrindRun {
  schema: "sbilab-callgrind/1";
  transport: string;
  /** sbilab's stack (`native` or `deno`) when a side is sbilab. */
  stack: string;
  sizeBytes: number;
  streams: number;
  /** Requests the sbilab client sent before each counted run (C clients send none). */
  warmup: number;
  /** Requests of the smaller and the larger run. */
  requests: [number, number];
  sides: CallgrindSide[];
}

/** One side of a {@linkcode CallgrindRun} from its two runs' annotations. */
export function callgrindSide(
  side: "client" | "server",
  name: string,
  runs: [Map<string, number>, Map<string, number>],
  requests: [number, number],
): CallgrindSide {
  const per = perUnitByObject(runs[0], requests[0], runs[1], requests[1]);
  return { side, name, perObject: Object.fromEntries(per), parts: byPart(per) };
}
