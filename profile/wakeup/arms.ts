/**
 * One run of one arm of the wake-up probe: the echo side (the wake-up
 * library woken by one mechanism, Deno's own UDP socket, or the kernel's echo
 * in C) in a process of its own, optionally under callgrind, and the C ping
 * peer against it. Every process started here is ended here.
 */
import { MECHANISMS } from "./ring_echo.ts";

/** The arms, in report order: the three mechanisms, Deno's UDP ping-pong, the kernel's. */
export const ARMS = [...MECHANISMS, "deno", "kernel"] as const;
/** One of {@linkcode ARMS}. */
export type Arm = typeof ARMS[number];

/** The artefacts an arm runs. */
export interface ArmPaths {
  /** libsbilab_wakeup.so */
  library: string;
  /** sbilab_wakeup_peer */
  peer: string;
}

/** What one arm run does. */
export interface ArmOptions {
  /** Round trips recorded. */
  count: number;
  /** Datagram payload in bytes (4-1400). */
  size: number;
  /** Round trips sent first and not recorded. */
  warmUp: number;
  /** Datagrams sent back to back per sample, all awaited (1-64); a sample is the burst's time. */
  burst: number;
  /** Time limit of the warm-up and of the recorded loop, each, in ms. */
  maxMs: number;
  /** Run the echo side under callgrind, writing this file. Default: no. */
  callgrindOut?: string;
}

/** The peer's summary line. */
export interface PeerSummary {
  sent: number;
  answered: number;
  stray: number;
  wrong: number;
  marked: number;
}

/** One arm run: the recorded bursts' times (ns; round trips when the burst is 1), the peer's summary, the echo side's counters. */
export interface ArmRun {
  samples: number[];
  peer: PeerSummary;
  side: Record<string, number>;
}

/** Parses the peer's output: one round-trip time per line, then `# sent=… marked=…`. */
export function parsePeerOutput(text: string): { samples: number[]; peer: PeerSummary } {
  const samples: number[] = [];
  let peer: PeerSummary | undefined;
  for (const line of text.split("\n")) {
    if (line.startsWith("# ")) {
      const f = Object.fromEntries(
        line.slice(2).split(" ").map((kv) => kv.split("=")).map(([k, v]) => [k, Number(v)]),
      );
      peer = {
        sent: f.sent,
        answered: f.answered,
        stray: f.stray,
        wrong: f.wrong,
        marked: f.marked,
      };
    } else if (/^\d+$/.test(line)) samples.push(Number(line));
  }
  if (!peer || Object.values(peer).some((v) => !Number.isInteger(v))) {
    throw new SyntaxError("The wake-up peer printed no summary line");
  }
  return { samples, peer };
}

const SIDE_SCRIPT = new URL("./_echo_side.ts", import.meta.url).pathname;

function sideCommand(arm: Arm, paths: ArmPaths, callgrindOut?: string): [string, string[]] {
  const [cmd, args]: [string, string[]] = arm === "kernel"
    ? [paths.peer, ["echo"]]
    : [Deno.execPath(), ["run", "-A", "--unstable-net", SIDE_SCRIPT, arm, paths.library]];
  if (!callgrindOut) return [cmd, args];
  return ["valgrind", ["--tool=callgrind", `--callgrind-out-file=${callgrindOut}`, cmd, ...args]];
}

/** Reads stdout lines until `want` lines came or the stream ended; rejects after `ms`. */
async function readLines(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  state: { text: string },
  want: number,
  ms: number,
): Promise<string[]> {
  const dec = new TextDecoder();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`The echo side said nothing for ${ms} ms`)), ms);
  });
  try {
    while (state.text.split("\n").length <= want) {
      const chunk = await Promise.race([reader.read(), late]);
      if (chunk.done) break;
      state.text += dec.decode(chunk.value, { stream: true });
    }
  } finally {
    clearTimeout(timer);
  }
  return state.text.split("\n").filter((l) => l.trim() !== "");
}

/** Runs one arm: starts its echo side, pings it, and stops it (by its pid on any failure). */
export async function runArm(arm: Arm, paths: ArmPaths, o: ArmOptions): Promise<ArmRun> {
  const [cmd, args] = sideCommand(arm, paths, o.callgrindOut);
  const side = new Deno.Command(cmd, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: o.callgrindOut ? "null" : "inherit",
  }).spawn();
  const reader = side.stdout.getReader();
  const state = { text: "" };
  const patience = o.callgrindOut ? 300_000 : 30_000;
  let ended = false;
  try {
    const [portLine] = await readLines(reader, state, 1, patience);
    const port = Number(portLine);
    if (!(port > 0)) throw new Error(`The echo side printed no port (${arm})`);
    const ping = await new Deno.Command(paths.peer, {
      args: ["ping", port, o.count, o.size, o.warmUp, o.maxMs, o.burst].map(String),
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).output();
    const { samples, peer } = parsePeerOutput(new TextDecoder().decode(ping.stdout));
    if (!ping.success) {
      throw new Error(`The wake-up peer failed against ${arm} (exit ${ping.code})`);
    }
    const lines = arm === "kernel" ? [] : await readLines(reader, state, 2, patience);
    const status = await side.status;
    ended = true;
    if (!status.success) throw new Error(`The ${arm} echo side failed (exit ${status.code})`);
    const sideStats = lines.length > 1 ? JSON.parse(lines[lines.length - 1]) : {};
    return { samples, peer, side: sideStats };
  } finally {
    reader.releaseLock();
    if (!ended) {
      try {
        side.kill("SIGTERM");
      } catch {
        // already gone
      }
      await side.status;
    }
    await side.stdout.cancel().catch(() => {});
  }
}
