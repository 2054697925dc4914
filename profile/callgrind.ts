/**
 * Instructions per request from two callgrind counts of the same process that
 * differ only in how many requests (or round trips) it handled: everything
 * both share (start-up, warm-up, connection set-up, shut-down) cancels, and
 * what is left, divided by the difference in requests, is one request's
 * instructions, per object file (the runtime binary, V8's generated code, the
 * sbilab module, nghttp2, GnuTLS, libc, ...) and per part (C code, libc, the
 * Deno binary, JIT code). Pure functions over callgrind's output format, and
 * {@linkcode readCallgrindFile}: the one reader of callgrind's files
 * (`lab profile --callgrind` and the wake-up probe).
 */

import { median } from "../lib/median.ts";

/** The object name V8's generated code (and any code in no object file) is filed under. */
export const JIT_OBJECT = "???";

/**
 * Instructions (Ir) each object file executed itself, from a callgrind output
 * file's text (callgrind's own format, as `--callgrind-out-file` or
 * `callgrind_control --dump` write it), by file name without its folder. Every
 * cost line counts for the object of the function block it stands in, so code
 * inlined from another source file counts where it runs; a call's cost (the
 * line after `calls=`) is the callee's and is not counted again, also for calls
 * still running when a dump was taken (which `callgrind_annotate` 3.19 lists
 * as the caller's own cost). Code in no object file (`???`: V8's generated
 * code, the vDSO) counts as {@linkcode JIT_OBJECT}.
 * @throws {SyntaxError} when the text is not callgrind output counting Ir
 */
export function parseCallgrindOut(text: string): Map<string, number> {
  const lines = text.split("\n");
  if (!lines[0].startsWith("# callgrind format") && !lines.some((l) => l.startsWith("events:"))) {
    throw new SyntaxError("Not a callgrind output file");
  }
  const names = new Map<string, string>();
  const out = new Map<string, number>();
  let positions = 1, ir = -1, object = "(no object)", call = false;
  for (const l of lines) {
    const c = l.charCodeAt(0);
    if ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42) { // 0-9 + - *
      if (call) {
        call = false; // the callee's inclusive cost, counted in the callee
        continue;
      }
      const n = Number(l.split(" ")[positions + ir] ?? 0);
      if (n) out.set(object, (out.get(object) ?? 0) + n);
    } else if (l.startsWith("ob=") || l.startsWith("cob=")) {
      // name compression: "(id) name" defines an id, "(id)" refers to one; ob and cob share ids
      const m = /^c?ob=(?:\((\d+)\))?\s*(.*)$/.exec(l)!;
      if (m[1] && m[2]) names.set(m[1], m[2]);
      const name = m[2] || names.get(m[1]) || "(no object)";
      if (l.startsWith("ob=")) object = name.replace(/^.*\//, "");
    } else if (l.startsWith("calls=")) call = true;
    else if (l.startsWith("positions:")) positions = l.split(/\s+/).length - 1;
    else if (l.startsWith("events:")) ir = l.split(/\s+/).slice(1).indexOf("Ir");
  }
  if (ir < 0) throw new SyntaxError("The callgrind output counts no Ir (instructions)");
  return out;
}

/**
 * Instructions per object file of one callgrind output file ({@linkcode parseCallgrindOut}).
 * @throws {Error} when the file cannot be read (a run that wrote none)
 */
export async function readCallgrindFile(file: string): Promise<Map<string, number>> {
  return parseCallgrindOut(await Deno.readTextFile(file));
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

/** The part an object file (as {@linkcode parseCallgrindOut} names it) belongs to. */
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

/**
 * The parts of several records side by side: per transport and side, the
 * median of each part's instructions per request over the records, with
 * their range.
 */
export function renderCallgrindSummary(records: CallgrindRun[]): string {
  const groups = new Map<string, CallgrindSide[]>();
  for (const r of records) {
    for (const s of r.sides) {
      const key = `${r.transport}\t${s.side} (${s.name})`;
      groups.set(key, [...(groups.get(key) ?? []), s]);
    }
  }
  const k = (n: number) => `${(Math.round(n / 100) / 10 + 0).toFixed(1)}k`;
  const cell = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return values.length === 1
      ? k(sorted[0])
      : `${k(median(sorted))} [${k(sorted[0])}–${k(sorted.at(-1)!)}]`;
  };
  const head = ["transport", "side", "runs", "total", ...PARTS.map((p) => PART_TITLES[p])];
  const rows = [...groups].map(([key, sides]) => [
    ...key.split("\t"),
    String(sides.length),
    cell(sides.map((s) => s.parts.total)),
    ...PARTS.map((p) => cell(sides.map((s) => s.parts[p]))),
  ]);
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r.map((c, i) => (i < 2 ? c.padEnd(width[i]) : c.padStart(width[i]))).join("  ");
  return [
    "instructions per request, median [range] over the runs:",
    line(head),
    ...rows.map(line),
  ].join("\n");
}
