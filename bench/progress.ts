/** A progress bar on stderr, shown only when stderr is a terminal. */
import cliProgress from "cli-progress";
import process from "node:process";

/** Progress sink handed to the runner. */
export interface Progress {
  update(label: string, fraction: number): void;
  stop(): void;
}

/** Creates the bar (or a silent sink when stderr is not a terminal). */
export function createProgress(): Progress {
  if (!Deno.stderr.isTerminal()) return { update() {}, stop() {} };
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
