/**
 * Argument checks shared by the CLI commands. Each throws {@linkcode UsageError}
 * with one line; `main.ts` turns that into exit status 2.
 */

/** Bad command-line input: `main.ts` prints its message and exits 2. */
export class UsageError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "UsageError";
  }
}

/** Runs `fn`; a `RangeError`, `TypeError` or `SyntaxError` it throws becomes a {@linkcode UsageError}. */
export function asUsage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof RangeError || err instanceof TypeError || err instanceof SyntaxError) {
      throw new UsageError(err.message, { cause: err });
    }
    throw err;
  }
}

/** Parses a TCP/UDP port (0 allowed). */
export function parsePort(value: string, flag: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) {
    throw new UsageError(`${flag} must be a port 0-65535, got ${value}`);
  }
  return n;
}

/** Parses a positive integer (or zero when `allowZero`). */
export function parsePositiveInt(value: string, flag: string, allowZero = false): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || (!allowZero && n === 0) || !Number.isSafeInteger(n)) {
    throw new UsageError(
      `${flag} must be a ${allowZero ? "non-negative" : "positive"} integer, got ${value}`,
    );
  }
  return n;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Parses `Name: value` into a pair; the name must be an HTTP token. */
export function parseHeader(line: string): [string, string] {
  const i = line.indexOf(":");
  const name = i > 0 ? line.slice(0, i).trim() : "";
  if (!TOKEN.test(name)) throw new UsageError(`Header must look like 'Name: value', got '${line}'`);
  const value = line.slice(i + 1).trim();
  if (/[\r\n\0]/.test(value)) throw new UsageError(`Header value of ${name} has a line break`);
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
    throw new UsageError(`--export must be LABEL:LEN with LEN 1-65535, got ${value}`);
  }
  return { label, length };
}
