/**
 * Where a request's time goes, from V8 CPU profiles (`deno run --cpu-prof`):
 * pure functions that read a `.cpuprofile` document, keep the samples taken
 * inside a measured window, sort each sample into a readable category by the
 * frames on its stack, and render one table per side (µs per request and
 * share). `lab profile` runs the processes; nothing here touches the system.
 */
import { formatDuration, formatSignificant } from "../lib/units.ts";

/** One frame as V8 records it. */
export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber?: number;
  columnNumber?: number;
}

/** One node of V8's call tree. */
export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** A V8 CPU profile: call tree, sampled leaf nodes, µs since the previous sample. */
export interface CpuProfile {
  nodes: ProfileNode[];
  /** Monotonic clock, µs. */
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * Samples of a profile that caught the thread at work (not idle): a process
 * that runs JavaScript on more than one thread (a server whose worker only
 * waits) writes one profile per thread, and the busiest is the one to read.
 */
export function busySamples(profile: CpuProfile): number {
  const idle = new Set(
    profile.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id),
  );
  let busy = 0;
  for (const id of profile.samples) if (!idle.has(id)) busy++;
  return busy;
}

/** The categories a sample falls into, in the order tables list them. */
export const CATEGORIES = [
  "socket wake-up / reactor",
  "FFI calls",
  "header conversion",
  "SBI headers",
  "timers",
  "promises / async",
  "handler",
  "encode",
  "transport glue (JS)",
  "runtime (native, outside JS)",
  "GC",
  "other",
  "idle (waiting)",
] as const;

/** One of {@linkcode CATEGORIES}. */
export type Category = typeof CATEGORIES[number];

/** Checks that `doc` is a V8 CPU profile; throws `SyntaxError` naming what is wrong. */
export function parseCpuProfile(doc: unknown): CpuProfile {
  const p = doc as Partial<CpuProfile> | null;
  if (!p || typeof p !== "object") throw new SyntaxError("A CPU profile must be a JSON object");
  if (!Array.isArray(p.nodes) || p.nodes.length === 0) {
    throw new SyntaxError("A CPU profile needs a non-empty nodes array");
  }
  if (!Array.isArray(p.samples) || !Array.isArray(p.timeDeltas)) {
    throw new SyntaxError("A CPU profile needs samples and timeDeltas arrays");
  }
  if (p.samples.length !== p.timeDeltas.length) {
    throw new SyntaxError("A CPU profile's samples and timeDeltas differ in length");
  }
  if (typeof p.startTime !== "number" || typeof p.endTime !== "number") {
    throw new SyntaxError("A CPU profile needs numeric startTime and endTime");
  }
  for (const n of p.nodes) {
    if (typeof n?.id !== "number" || typeof n.callFrame?.functionName !== "string") {
      throw new SyntaxError("Every node of a CPU profile needs an id and a callFrame");
    }
  }
  return p as CpuProfile;
}

const FFI_FILES = /\/transports\/(h2\/(ffi|server_ffi|tls_ffi)|native\/libc)\.ts$/;
// The h3 module's safe wrappers: these methods are one call into the module each (QUIC, TLS and
// the socket's system calls run inside it); the rest of those files is JS (event decoding).
const H3_WRAPPERS = /\/transports\/h3\/h3_(client_conn|server_endpoint|socket)\.ts$/;
const H3_FFI_METHODS =
  /^(io|ioDeferSend|flush|recv|send|request|requestBlock|respond|respondBlock|timeoutMs|onTimeout)$/;
const TIMER_FILES = /(^node:timers$|\/timers\.(m?js|ts)$|\/deadline_timer\.ts$|\/timer_wheel\.ts$)/;
const SOCKET_FILES = /^(ext:deno_net\/|ext:deno_web\/06_streams\.js|ext:deno_node\/internal)/;
const TIMER_NAMES = /^(setTimeout|clearTimeout|timedRequest|.*[Tt]imer.*|.*[Dd]eadline.*)$/;
const SOCKET_OPS = /^op_(net_|read|write|tls_|dgram_|fd_|tcp_|udp_)/;
const PROMISE_OPS = /^(op_void_async|runMicrotasks|processTicksAndRejections|.*[Pp]romise.*)$/;

/**
 * The category of one frame, or undefined when the frame says nothing by
 * itself (the caller then looks at the frame that called it).
 */
export function frameCategory(frame: CallFrame): Category | undefined {
  const { functionName: fn, url } = frame;
  if (fn === "(garbage collector)") return "GC";
  if (fn === "(idle)") return "idle (waiting)";
  if (fn === "(program)") return "runtime (native, outside JS)";
  if (fn.startsWith("op_ffi") || url.startsWith("ext:deno_ffi")) return "FFI calls";
  if (TIMER_FILES.test(url) || /^op_(timer|sleep)/.test(fn)) return "timers";
  if (SOCKET_OPS.test(fn) || SOCKET_FILES.test(url) || fn === "#sendNow") {
    return "socket wake-up / reactor"; // #sendNow: the h2 client's send() straight to the fd
  }
  if (PROMISE_OPS.test(fn) || url === "ext:core/00_infra.js") return "promises / async";
  if (FFI_FILES.test(url)) return "FFI calls";
  if (H3_WRAPPERS.test(url) && H3_FFI_METHODS.test(fn)) return "FFI calls";
  if (url.endsWith("/transports/sbi_headers.ts")) return "SBI headers";
  if (url.includes("/handler/")) return "handler";
  if (/\/transports\/(wire|[a-z0-9_]*\/convert|h2\/response_body)\.ts$/.test(url)) {
    return /encode|field|reserve|Writer|write/i.test(fn) ? "encode" : "header conversion";
  }
  if (url.endsWith("/transports/client_core.ts") && TIMER_NAMES.test(fn)) return "timers";
  if (url.includes("/transports/")) return "transport glue (JS)";
  return undefined;
}

/** Category of a stack, leaf first: the first frame that names one decides. */
export function stackCategory(stack: readonly CallFrame[]): Category {
  for (const f of stack) {
    const c = frameCategory(f);
    if (c) return c;
  }
  return "other";
}

/** Options for {@linkcode breakdown}. */
export interface BreakdownOptions {
  /** Start of the measured window, on the profile's clock (µs). Default: the profile's start. */
  fromUs?: number;
  /** End of the measured window (µs). Default: the profile's end. */
  toUs?: number;
  /** Requests completed in the window; must be at least 1. */
  requests: number;
}

/** Time of one category within the window. */
export interface CategoryTime {
  category: Category;
  /** Total µs in the window. */
  totalUs: number;
  /** µs per request. */
  perRequestUs: number;
  /** Share of the busy time (every category but idle), 0…1; idle's share is of the window. */
  share: number;
}

/** Where one side's time went in a window. */
export interface Breakdown {
  requests: number;
  /** Window length, µs. */
  windowUs: number;
  /** Samples inside the window. */
  samples: number;
  /** Busy (non-idle) µs per request. */
  busyPerRequestUs: number;
  /** Categories with any time, in {@linkcode CATEGORIES} order. */
  categories: CategoryTime[];
  /** The busiest leaf functions, by self time inside the window. */
  top: { name: string; perRequestUs: number }[];
}

function frameName(f: CallFrame): string {
  const file = f.url ? f.url.replace(/^.*\//, "") : "";
  return `${f.functionName || "(anonymous)"}${file ? ` ${file}` : ""}`;
}

/**
 * Sorts the samples taken inside the window into categories. A sample lasts
 * until the next one (the last one, one median interval).
 */
export function breakdown(profile: CpuProfile, options: BreakdownOptions): Breakdown {
  if (!(options.requests >= 1)) throw new RangeError("A breakdown needs at least one request");
  const from = options.fromUs ?? profile.startTime;
  const to = options.toUs ?? profile.endTime;
  if (!(to > from)) throw new RangeError("The measured window must have a positive length");
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const catOf = new Map<number, Category>();
  const category = (id: number): Category => {
    let c = catOf.get(id);
    if (c) return c;
    const stack: CallFrame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const node = byId.get(at);
      if (node) stack.push(node.callFrame);
    }
    c = stackCategory(stack);
    catOf.set(id, c);
    return c;
  };
  const times = new Float64Array(profile.samples.length);
  for (let i = 0, t = profile.startTime; i < times.length; i++) {
    t += profile.timeDeltas[i];
    times[i] = t;
  }
  const deltas = profile.timeDeltas.slice(1).filter((d) => d > 0).sort((a, b) => a - b);
  const lastDuration = deltas.length ? deltas[deltas.length >> 1] : 0;
  const totals = new Map<Category, number>();
  const self = new Map<number, number>();
  let samples = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const t = times[i];
    if (t < from || t >= to) continue;
    const next = i + 1 < profile.samples.length ? times[i + 1] : t + lastDuration;
    const d = Math.max(0, Math.min(next, to) - t);
    const id = profile.samples[i];
    const c = category(id);
    totals.set(c, (totals.get(c) ?? 0) + d);
    if (c !== "idle (waiting)") self.set(id, (self.get(id) ?? 0) + d);
    samples++;
  }
  const idle = totals.get("idle (waiting)") ?? 0;
  let busy = 0;
  for (const [c, v] of totals) if (c !== "idle (waiting)") busy += v;
  const n = options.requests;
  const windowUs = to - from;
  const categories: CategoryTime[] = [];
  for (const c of CATEGORIES) {
    const v = totals.get(c);
    if (!v) continue;
    categories.push({
      category: c,
      totalUs: v,
      perRequestUs: v / n,
      share: c === "idle (waiting)" ? idle / windowUs : busy > 0 ? v / busy : 0,
    });
  }
  const byName = new Map<string, number>();
  for (const [id, v] of self) {
    const name = frameName(byId.get(id)!.callFrame);
    byName.set(name, (byName.get(name) ?? 0) + v);
  }
  const top = [...byName].sort((a, b) => b[1] - a[1]).slice(0, 12)
    .map(([name, v]) => ({ name, perRequestUs: v / n }));
  return { requests: n, windowUs, samples, busyPerRequestUs: busy / n, categories, top };
}

/** Process CPU time over the window, µs (user and system, from the kernel). */
export interface CpuTime {
  userUs: number;
  systemUs: number;
}

/** A µs figure with three significant digits (the column names the unit). */
const fmt = formatSignificant;

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
}

/**
 * One side's table: a row per category (µs/request, share of the busy
 * time), the busy total, the process's CPU time per request when known (it
 * counts the kernel and every thread, which the profile does not), and the
 * busiest functions.
 */
export function renderBreakdown(title: string, b: Breakdown, cpu?: CpuTime): string {
  const rows: string[][] = [["category", "µs/request", "share"]];
  for (const c of b.categories) {
    if (c.category === "idle (waiting)") continue;
    rows.push([c.category, fmt(c.perRequestUs), `${(c.share * 100).toFixed(1)} %`]);
  }
  rows.push(["busy on the main thread (profile)", fmt(b.busyPerRequestUs), "100 %"]);
  const idle = b.categories.find((c) => c.category === "idle (waiting)");
  if (idle) {
    rows.push([
      "idle (waiting for the peer)",
      fmt(idle.perRequestUs),
      `${(idle.share * 100).toFixed(1)} % of wall`,
    ]);
  }
  if (cpu) {
    rows.push(["process CPU, user (all threads)", fmt(cpu.userUs / b.requests), ""]);
    rows.push(["process CPU, system (kernel)", fmt(cpu.systemUs / b.requests), ""]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const lines = [
    `${title}: ${b.requests} requests, ${formatDuration(b.windowUs * 1e3)}, ${b.samples} samples`,
    ...rows.map((r) => pad(r, widths)),
    "  busiest functions (self time, µs/request):",
    ...b.top.map((t) => `    ${fmt(t.perRequestUs).padStart(7)}  ${t.name}`),
  ];
  return lines.join("\n");
}
