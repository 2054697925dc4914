/**
 * Memory of one warm connection (`lab profile --memory`): pure functions over
 * the resident sizes the client process sampled from `/proc/<pid>/status` of
 * both sides (right after the warm-up, then every so many requests), the
 * estimates per side (RSS after the warm-up and at the end, growth, peak,
 * growth over each step of 10k requests) as a plain record (`sbilab-memory/1`), and the
 * table rendered from that record. Steady growth from one step to the next
 * reads as a leak; growth that stops after the first steps reads as a heap
 * settling. `lab profile` runs the processes; nothing here touches the system.
 */
import { formatBytes } from "../lib/units.ts";
import { layoutColumns } from "../bench/report/mod.ts";

/** The growth over the measured requests each side should stay under: 5 MiB. */
export const MEMORY_GROWTH_TARGET_BYTES = 5 * 1024 * 1024;

/** Requests per step: the client reads both sides' RSS every this many requests. */
export const MEMORY_STEP_REQUESTS = 10_000;

/** One resident size reading, after `requests` measured requests (0: right after the warm-up). */
export interface RssSample {
  requests: number;
  rssBytes: number;
}

/** What was read from one process over the run. */
export interface MemoryReadings {
  /** The process read (the one that sent or served the requests, not a wrapper). */
  pid: number;
  /** Its name from `/proc/<pid>/status`, e.g. `deno`. */
  process: string;
  /** Resident sizes in the order taken, the first right after the warm-up. */
  samples: RssSample[];
  /** `VmHWM` at the end: the highest resident size since the process started, bytes. */
  peakBytes: number;
}

/** Growth over one step of the run. */
export interface MemoryStep {
  /** Measured requests at the start and end of the step. */
  fromRequests: number;
  toRequests: number;
  /** RSS growth over the step, bytes (not scaled: a shorter last step shows its own growth). */
  growthBytes: number;
}

/** One side's readings and estimates. */
export interface MemorySide extends MemoryReadings {
  /** `client (sbilab SBI client)`, `server (sbilab)`. */
  title: string;
  afterWarmupBytes: number;
  endBytes: number;
  /** End minus after warm-up, bytes (negative when the process shrank). */
  growthBytes: number;
  steps: MemoryStep[];
  /** Whether the growth stays under the record's target. */
  underTarget: boolean;
}

/** How a `lab profile --memory` run was set up. */
export interface MemorySettings {
  transport: string;
  stack: string;
  /** Server implementation: sbilab, nghttpd, gtlsserver. */
  server: string;
  sizeBytes: number;
  streams: number;
  warmup: number;
  requests: number;
  /** Measured requests that failed or answered wrongly. */
  errors: number;
  /** Whether the client ran on CPU 0 and the server on CPU 1. */
  pinned: boolean;
}

/** A whole `lab profile --memory` run. */
export interface MemoryRun extends MemorySettings {
  schema: "sbilab-memory/1";
  /** Requests between two readings. */
  stepRequests: number;
  targetBytes: number;
  sides: MemorySide[];
}

/** Everything of a {@linkcode MemoryRun} but the estimates. */
export interface MemoryRunInput extends MemorySettings {
  /** Requests between two readings. Default {@linkcode MEMORY_STEP_REQUESTS}. */
  stepRequests?: number;
  /** Growth target per side, bytes. Default {@linkcode MEMORY_GROWTH_TARGET_BYTES}. */
  targetBytes?: number;
  /** Per side: its title and what was read. */
  sides: { title: string; readings: MemoryReadings }[];
}

/**
 * The estimates of one side from its readings. Throws `RangeError` when there
 * are fewer than two samples, a sample is not a finite size, or the request
 * counts do not rise.
 */
export function memorySide(
  title: string,
  readings: MemoryReadings,
  targetBytes: number = MEMORY_GROWTH_TARGET_BYTES,
): MemorySide {
  const s = readings.samples;
  if (s.length < 2) throw new RangeError(`${title}: memory needs at least two samples`);
  for (const [i, x] of s.entries()) {
    if (!Number.isFinite(x.rssBytes) || x.rssBytes < 0) {
      throw new RangeError(`${title}: sample ${i} has no valid size`);
    }
    if (i > 0 && !(x.requests > s[i - 1].requests)) {
      throw new RangeError(`${title}: sample ${i} does not come after sample ${i - 1}`);
    }
  }
  const steps = s.slice(1).map((x, i) => ({
    fromRequests: s[i].requests,
    toRequests: x.requests,
    growthBytes: x.rssBytes - s[i].rssBytes,
  }));
  const afterWarmupBytes = s[0].rssBytes;
  const endBytes = s.at(-1)!.rssBytes;
  const growthBytes = endBytes - afterWarmupBytes;
  return {
    title,
    ...readings,
    afterWarmupBytes,
    endBytes,
    growthBytes,
    steps,
    underTarget: growthBytes < targetBytes,
  };
}

/** The record of a run: its settings and every side's readings and estimates. */
export function memoryRun(input: MemoryRunInput): MemoryRun {
  const targetBytes = input.targetBytes ?? MEMORY_GROWTH_TARGET_BYTES;
  const { sides, targetBytes: _t, stepRequests, ...rest } = input;
  return {
    schema: "sbilab-memory/1",
    ...rest,
    stepRequests: stepRequests ?? MEMORY_STEP_REQUESTS,
    targetBytes,
    sides: sides.map((s) => memorySide(s.title, s.readings, targetBytes)),
  };
}

function change(bytes: number): string {
  return bytes > 0 ? `+${formatBytes(bytes)}` : bytes === 0 ? "±0 B" : formatBytes(bytes);
}

function thousands(n: number): string {
  return n % 1000 === 0 && n > 0 ? `${n / 1000}k` : String(n);
}

/** The memory table of a run: one row per side, then the growth of every step per side. */
export function renderMemoryRun(run: MemoryRun): string {
  const target = formatBytes(run.targetBytes);
  const head = `memory of one warm connection: ${run.transport} on the ${run.stack} stack, ` +
    `sbilab client → ${run.server}, ${formatBytes(run.sizeBytes)}, ${run.streams} in flight, ` +
    `${run.requests} requests after ${run.warmup} warm-up; ` +
    `${run.pinned ? "client on CPU 0, server on CPU 1" : "not pinned"}; ` +
    "RSS from /proc/<pid>/status, no profiler";
  const sides = layoutColumns(
    ["side", "pid", "after warm-up", "at the end", "growth", "peak (VmHWM)", `growth < ${target}`],
    run.sides.map((s) => [
      s.title,
      `${s.pid} ${s.process}`,
      formatBytes(s.afterWarmupBytes),
      formatBytes(s.endBytes),
      change(s.growthBytes),
      formatBytes(s.peakBytes),
      s.underTarget ? "yes" : "NO",
    ]),
  );
  const steps = run.sides[0]?.steps ?? [];
  const perStep = layoutColumns(
    ["requests", ...run.sides.map((s) => s.title.split(" ")[0])],
    steps.map((st, i) => [
      `${thousands(st.fromRequests)}–${thousands(st.toRequests)}`,
      ...run.sides.map((s) => s.steps[i] ? change(s.steps[i].growthBytes) : "–"),
    ]),
  );
  const verdict = run.sides.map((s) =>
    `${s.title.split(" ")[0]} ${change(s.growthBytes)} ${s.underTarget ? "under" : "NOT under"}`
  ).join(", ");
  return [
    head,
    sides,
    "",
    `RSS growth per step of ${thousands(run.stepRequests)} requests ` +
    "(steady growth: a leak; growth that stops: the heap settling)",
    perStep,
    "",
    `target: RSS growth over ${run.requests} requests under ${target} per side: ${verdict}`,
    "peak (VmHWM) is the highest RSS since the process started, start-up and warm-up included",
    ...(run.errors ? [`${run.errors} of ${run.requests} requests failed or answered wrongly`] : []),
  ].join("\n");
}
