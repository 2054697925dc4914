/**
 * The argument checks every CLI command uses: one set of parsers, one message
 * style. Each throws {@linkcode UsageError} with one line that names the
 * option, says what it must be and what it got:
 * `--h2c-port must be a port 0-65535, got 70000`. A parser of a lower layer
 * that rejects the text (a `RangeError`, `TypeError` or `SyntaxError`) keeps
 * its own message behind the option's name: `--link: Unknown link spec key "rtt"`.
 * `main.ts` turns a `UsageError` into exit status 2.
 */

/** Bad command-line input: `main.ts` prints its message and exits 2. */
export class UsageError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "UsageError";
  }
}

/** The one message shape: `<flag> must be <what>, got <value>`. */
export function invalid(flag: string, what: string, value: string): UsageError {
  return new UsageError(`${flag} must be ${what}, got ${value === "" ? '""' : value}`);
}

const HINTS = new Map<string, { flag: string; words: readonly string[] }[]>();

/**
 * Declares that a bare `word` given to `command` (`lab bench`) most likely
 * meant `flag word` (`lab bench concurrency` → `--scenario concurrency`).
 */
export function hintArgument(command: string, flag: string, words: readonly string[]): void {
  HINTS.set(command, [...(HINTS.get(command) ?? []), { flag, words }]);
}

/** The option a stray argument most likely meant (`--scenario concurrency`), if any. */
export function argumentHint(command: string, word: string): string | undefined {
  for (const h of HINTS.get(command) ?? []) if (h.words.includes(word)) return `${h.flag} ${word}`;
  return undefined;
}

/** `<a> and <b> exclude each other`, as a {@linkcode UsageError}. */
export function exclusive(a: string, b: string): UsageError {
  return new UsageError(`${a} and ${b} exclude each other`);
}

function isBadInput(err: unknown): err is Error {
  return err instanceof RangeError || err instanceof TypeError || err instanceof SyntaxError;
}

/**
 * Runs `fn` (a parser of a lower layer); a `RangeError`, `TypeError` or
 * `SyntaxError` it throws becomes a {@linkcode UsageError} with the same
 * message, behind `flag` when one is given. Anything else passes through.
 */
export function asUsage<T>(fn: () => T, flag?: string): T {
  try {
    return fn();
  } catch (err) {
    if (!isBadInput(err)) throw err;
    throw new UsageError(flag ? `${flag}: ${err.message}` : err.message, { cause: err });
  }
}

/** The same as {@linkcode asUsage} for an async parser. */
export async function asUsageAsync<T>(fn: () => Promise<T>, flag?: string): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!isBadInput(err)) throw err;
    throw new UsageError(flag ? `${flag}: ${err.message}` : err.message, { cause: err });
  }
}

/** Bounds for {@linkcode parseInteger} and {@linkcode parseNumber}. */
export interface Bounds {
  /** Smallest value accepted. Default 0. */
  min?: number;
  /** Largest value accepted. Default `Number.MAX_SAFE_INTEGER`. */
  max?: number;
}

function describe(kind: string, min: number, max: number): string {
  if (max < Number.MAX_SAFE_INTEGER) return `${kind} ${min}-${max}`;
  return `${kind} ≥ ${min}`;
}

/** Parses a whole decimal number within `bounds` (default 0 up). */
export function parseInteger(value: string, flag: string, bounds: Bounds = {}): number {
  const { min = 0, max = Number.MAX_SAFE_INTEGER } = bounds;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw invalid(flag, describe("a whole number", min, max), value);
  }
  return n;
}

/** Parses a TCP or UDP port (0 allowed: any free port). */
export function parsePort(value: string, flag: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 65535) throw invalid(flag, "a port 0-65535", value);
  return Number(value);
}

/** Options for {@linkcode parseNumber}. */
export interface NumberBounds extends Bounds {
  /** Accept only values strictly above this (instead of `min`). */
  above?: number;
}

/** Parses a finite decimal number (fractions allowed) within `bounds` (default 0 up). */
export function parseNumber(value: string, flag: string, bounds: NumberBounds = {}): number {
  const { min = 0, max = Number.MAX_SAFE_INTEGER, above } = bounds;
  const n = Number(value);
  const low = above === undefined ? n >= min : n > above;
  if (value.trim() === "" || !Number.isFinite(n) || !low || n > max) {
    const what = above === undefined ? describe("a number", min, max) : `a number above ${above}`;
    throw invalid(flag, what, value);
  }
  return n;
}

/** Splits a comma-separated list; an empty list is a usage error. */
export function parseList(value: string, flag: string): string[] {
  const items = value.split(",").map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw invalid(flag, "a comma-separated list", value);
  return items;
}

/** Checks that `value` is one of `choices`. */
export function parseChoice<T extends string>(
  value: string,
  flag: string,
  choices: readonly T[],
): T {
  if (!(choices as readonly string[]).includes(value)) {
    throw invalid(flag, `one of ${choices.join(", ")}`, value);
  }
  return value as T;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Parses `Name: value` (the `-H` option) into a pair; the name must be an HTTP token. */
export function parseHeader(line: string): [string, string] {
  const i = line.indexOf(":");
  const name = i > 0 ? line.slice(0, i).trim() : "";
  if (!TOKEN.test(name)) throw invalid("-H", "a header like 'Name: value'", `'${line}'`);
  const value = line.slice(i + 1).trim();
  if (/[\r\n\0]/.test(value)) throw invalid("-H", "one line", `a line break in ${name}`);
  return [name, value];
}

/** An exporter request from `--export LABEL:LEN`. */
export interface ExportSpec {
  /** Exporter label, for example `EXPORTER_3GPP_N32_MASTER`. */
  label: string;
  /** Output length in bytes (1-65535). */
  length: number;
}

/** Parses `LABEL:LEN` (the label may itself hold colons; LEN 1-65535). */
export function parseExport(value: string): ExportSpec {
  const at = value.lastIndexOf(":");
  const label = value.slice(0, at), len = value.slice(at + 1);
  const length = Number(len);
  if (at <= 0 || !/^\d+$/.test(len) || length < 1 || length > 65535) {
    throw invalid("--export", "LABEL:LEN with LEN 1-65535", value);
  }
  return { label, length };
}

/** The units {@linkcode parseDuration} reads, in ms. */
const DURATION_UNITS: Record<string, number> = {
  us: 0.001,
  "µs": 0.001,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Options for {@linkcode parseDuration}. */
export interface DurationOptions {
  /** What a bare number means (each option documents its own). Default `"ms"`. */
  bare?: "ms" | "s" | "m";
  /** Smallest duration accepted, ms. Default 0. */
  minMs?: number;
  /** Largest duration accepted, ms. Default `Number.MAX_SAFE_INTEGER`. */
  maxMs?: number;
}

/**
 * The one duration syntax of every option that takes a time: a number with a
 * unit (`750us`, `500ms`, `3s`, `2m`, `1h`, fractions allowed: `1.5s`), or a
 * bare number in the unit the option documents (`options.bare`). Returns ms.
 */
export function parseDuration(value: string, flag: string, options: DurationOptions = {}): number {
  const { bare = "ms", minMs = 0, maxMs = Number.MAX_SAFE_INTEGER } = options;
  const m = /^(\d+(?:\.\d+)?)(us|µs|ms|s|m|h)?$/.exec(value.trim());
  const ms = m ? Number(m[1]) * DURATION_UNITS[m[2] ?? bare] : NaN;
  if (!Number.isFinite(ms)) {
    throw invalid(flag, `a duration like 500ms, 3s or 2m (bare number = ${bare})`, value);
  }
  if (ms < minMs || ms > maxMs) {
    const range = maxMs < Number.MAX_SAFE_INTEGER
      ? `from ${formatMs(minMs)} to ${formatMs(maxMs)}`
      : `at least ${formatMs(minMs)}`;
    throw invalid(flag, `a duration ${range}`, value);
  }
  return ms;
}

function formatMs(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms >= 1000 && ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/**
 * Checks, before any work, that every output path given can be written: its
 * folder exists and the file can be created (a file made only for the check
 * is removed again). Throws one {@linkcode UsageError} naming the option:
 * `--json /nonexistent/x.json: No such file or directory (the folder /nonexistent does not exist)`.
 */
export async function checkOutputPaths(paths: Record<string, string | undefined>): Promise<void> {
  for (const [flag, path] of Object.entries(paths)) {
    if (path === undefined) continue;
    if (path === "") throw invalid(flag, "a file name", path);
    const slash = path.lastIndexOf("/");
    const dir = slash < 0 ? "." : slash === 0 ? "/" : path.slice(0, slash);
    try {
      if (!(await Deno.stat(dir)).isDirectory) {
        throw new UsageError(`${flag} ${path}: ${dir} is not a folder`);
      }
    } catch (err) {
      if (err instanceof UsageError) throw err;
      throw new UsageError(`${flag} ${path}: the folder ${dir} does not exist`);
    }
    let existed = true;
    try {
      if ((await Deno.stat(path)).isDirectory) {
        throw new UsageError(`${flag} ${path}: is a folder, not a file`);
      }
    } catch (err) {
      if (err instanceof UsageError) throw err;
      existed = false;
    }
    try {
      const f = await Deno.open(path, { write: true, create: true });
      f.close();
      if (!existed) await Deno.remove(path);
    } catch (err) {
      throw new UsageError(`${flag} ${path}: cannot be written (${(err as Error).message})`);
    }
  }
}
