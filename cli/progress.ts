/**
 * Progress on stderr: a bar on a terminal, plain `progress: 40 % (row 3/6, …)`
 * lines otherwise (see {@linkcode createProgressLines}), nothing with `quiet`.
 */
import cliProgress from "cli-progress";
import process from "node:process";
import { createProgressLines } from "../lib/progress_lines.ts";

/** Progress sink handed to the runner. */
export interface Progress {
  update(label: string, fraction: number): void;
  stop(): void;
  /** How many rows the run has, when the caller knows (plain lines then say `row k/n`). */
  setRows?(rows: number): void;
}

/** Options for {@linkcode createProgress}. */
export interface ProgressOptions {
  /** Show nothing (`--quiet`). Default false. */
  quiet?: boolean;
  /**
   * Draw a bar on a terminal. Default true; false for a command whose own
   * output lines already show its progress there (plain lines elsewhere).
   */
  bar?: boolean;
  /** What one row is called in plain lines. Default `row`. */
  rowName?: string;
}

/** Creates the bar on a terminal, plain progress lines elsewhere, or a silent sink when quiet. */
export function createProgress(options: ProgressOptions = {}): Progress {
  if (options.quiet) return { update() {}, stop() {} };
  if (!Deno.stderr.isTerminal()) return createProgressLines({ rowName: options.rowName });
  if (options.bar === false) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar({
    format: " {bar} {percentage}% | {label}",
    stream: process.stderr,
    clearOnComplete: true,
    hideCursor: true,
  }, cliProgress.Presets.shades_classic);
  let started = false;
  let stopped = false;
  return {
    update(label, fraction) {
      if (stopped) return;
      const v = Math.round(fraction * 100);
      if (!started) {
        bar.start(100, v, { label });
        started = true;
      } else bar.update(v, { label });
    },
    stop() {
      if (started && !stopped) bar.stop();
      stopped = true;
    },
  };
}
