/**
 * The wake-up probe: how cheaply a native I/O thread can hand JavaScript a
 * batch of completed UDP events, per wake-up mechanism, beside Deno's own UDP
 * ping-pong and the kernel's. Builds the library and the peer if needed,
 * runs the timed rounds and (with --callgrind) the instruction counts, and
 * prints the report. See docs/wakeup.md.
 *
 * Usage: deno run -A --unstable-net profile/wakeup/main.ts [--rounds N] [--count N]
 *        [--size BYTES] [--warm-up N] [--burst N] [--callgrind N] [--seed N] [--out FILE]
 */
import { parseArgs } from "node:util";
import { ensureBuilt } from "../../lib/native_build.ts";
import { findTool } from "../../lib/host.ts";
import { runProbe } from "./probe.ts";
import { renderProbe } from "./report.ts";

/** Parses a whole number in [min, max] or throws a one-line RangeError. */
function whole(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new RangeError(`--${name} must be a whole number from ${min} to ${max}, got ${text}`);
  }
  return n;
}

async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      rounds: { type: "string", default: "6" },
      count: { type: "string", default: "3000" },
      size: { type: "string", default: "64" },
      "warm-up": { type: "string", default: "500" },
      burst: { type: "string", default: "1" },
      callgrind: { type: "string" },
      seed: { type: "string", default: "1" },
      out: { type: "string" },
    },
    strict: true,
  });
  const options = {
    rounds: whole("rounds", values.rounds, 0, 100),
    count: whole("count", values.count, 1, 1_000_000),
    size: whole("size", values.size, 4, 1400),
    warmUp: whole("warm-up", values["warm-up"], 0, 1_000_000),
    burst: whole("burst", values.burst, 1, 64),
    callgrindCount: values.callgrind === undefined
      ? 0
      : whole("callgrind", values.callgrind, 8, 1_000_000),
    seed: whole("seed", values.seed, 0, 2 ** 31),
    progress: (line: string) => console.error(line),
  };
  if (options.rounds === 1) throw new RangeError("--rounds must be 0 or at least 2");
  if (options.callgrindCount && !findTool("valgrind")) {
    throw new Error("valgrind not found: run apt-get install -y valgrind");
  }
  const paths = {
    library: await ensureBuilt("wakeup", { quiet: true }),
    peer: await ensureBuilt("wakeup_peer", { quiet: true }),
  };
  const record = await runProbe(paths, options);
  if (values.out) await Deno.writeTextFile(values.out, JSON.stringify(record));
  console.log(renderProbe(record));
}

if (import.meta.main) {
  try {
    await main(Deno.args);
  } catch (err) {
    console.error(`wakeup: ${err instanceof Error ? err.message : err}`);
    Deno.exit(err instanceof RangeError || err instanceof TypeError ? 2 : 1);
  }
}
