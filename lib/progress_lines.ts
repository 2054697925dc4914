/**
 * Progress as plain lines, for a stderr that is not a terminal (a pipe, a
 * file, CI): `progress: 40 % (row 3/6, h2-tls 16 KiB)`, as h2load prints its
 * `progress: 10% done` lines. One line when a new row starts, then at most
 * one per interval while its share moves, so a long run writes a bounded
 * number of lines and a log shows where it stood.
 */

/** A sink for progress: a label (the row) and how far along it is, 0-1. */
export interface ProgressLines {
  /** Records how far `label` is; writes a line when one is due. */
  update(label: string, fraction: number): void;
  /** Says how many rows the run has, so lines name `row k/n` and the run's share. */
  setRows(rows: number): void;
  /**
   * Writes the closing line once (when anything was shown): `100 % done`, or
   * with `completed` false (the run failed or was cut short) `stopped at` the
   * last share shown. Idempotent.
   */
  stop(completed?: boolean): void;
}

/** Options for {@linkcode createProgressLines}. */
export interface ProgressLinesOptions {
  /** Where each line goes (without its newline). Default: stderr. */
  write?: (line: string) => void;
  /** Clock in ms. Default `performance.now`. */
  now?: () => number;
  /** Least time between two lines of the same row, ms. Default 2000. */
  intervalMs?: number;
  /** What one row is called in the lines (`case 2/9`, `phase 1`). Default `row`. */
  rowName?: string;
}

function percent(f: number): string {
  return `${Math.floor(Math.max(0, Math.min(1, f)) * 100)} %`;
}

const enc = new TextEncoder();

function toStderr(line: string): void {
  Deno.stderr.writeSync(enc.encode(`${line}\n`));
}

function rowKey(label: string | undefined): string | undefined {
  return label?.split(" · ")[0];
}

/** Creates the line writer. */
export function createProgressLines(options: ProgressLinesOptions = {}): ProgressLines {
  const write = options.write ?? toStderr;
  const now = options.now ?? (() => performance.now());
  const intervalMs = options.intervalMs ?? 2000;
  const name = options.rowName ?? "row";
  let rows: number | undefined;
  let row = 0;
  let label: string | undefined;
  let lastAt = -Infinity;
  let lastShown = "";
  let stopped = false;

  const line = (fraction: number): string => {
    if (rows === undefined) return `progress: ${percent(fraction)} (${name} ${row}, ${label})`;
    const overall = (Math.min(row, rows) - 1 + Math.max(0, Math.min(1, fraction))) / rows;
    return `progress: ${percent(overall)} (${name} ${row}/${rows}, ${label})`;
  };

  return {
    setRows(n) {
      rows = n > 0 ? n : undefined;
    },
    update(l, fraction) {
      if (stopped) return;
      const t = now();
      // a label's part before " · " names its row: "interleaved rounds · round 3 of 10" is
      // the same row as "interleaved rounds · warm-up h2c 256 B", not a new one
      const newRow = rowKey(l) !== rowKey(label);
      label = l;
      if (newRow) row++;
      else if (t - lastAt < intervalMs) return;
      const text = line(fraction);
      if (text === lastShown) return;
      write(text);
      lastShown = text;
      lastAt = t;
    },
    stop(completed = true) {
      if (stopped) return;
      stopped = true;
      if (row === 0) return;
      if (completed) write(`progress: 100 % done (${row} ${name}${row === 1 ? "" : "s"})`);
      else write(lastShown.replace(/^progress: /, "progress: stopped at "));
    },
  };
}
