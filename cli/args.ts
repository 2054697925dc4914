/** Argument checks shared by the CLI commands; each throws `RangeError` with one line. */

/** Parses a TCP/UDP port (0 allowed). */
export function parsePort(value: string, flag: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) {
    throw new RangeError(`${flag} must be a port 0-65535, got ${value}`);
  }
  return n;
}

/** Parses a positive integer (or zero when `allowZero`). */
export function parsePositiveInt(value: string, flag: string, allowZero = false): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || (!allowZero && n === 0) || !Number.isSafeInteger(n)) {
    throw new RangeError(
      `${flag} must be a ${allowZero ? "non-negative" : "positive"} integer, got ${value}`,
    );
  }
  return n;
}

/** Parses `Name: value` into a pair. */
export function parseHeader(line: string): [string, string] {
  const i = line.indexOf(":");
  if (i <= 0) throw new RangeError(`Header must look like 'Name: value', got '${line}'`);
  return [line.slice(0, i).trim(), line.slice(i + 1).trim()];
}
