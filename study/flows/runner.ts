/**
 * Runs the call flows of `definitions.ts` for one UE: fills each step's path
 * and body from the flow's variables, sends it on the connection of its NF
 * pair, checks the status, captures what later steps need, and times every
 * step. A step that fails ends the flow, which is reported failed with the
 * step's name; a request that throws (timeout, reset) is retried a bounded
 * number of times and every retry is counted.
 */
import { isMultipartRelated, parseMultipart } from "../../handler/multipart.ts";
import { parsePointer } from "../../handler/json_patch.ts";
import type { ClientResponse, SbiClient } from "../../transports/types.ts";
import type { Clock } from "../../bench/measure/mod.ts";
import { BODIES, type FlowVars } from "./bodies.ts";
import type { Capture, FlowDefinition, FlowStep, NfType } from "./definitions.ts";

/** The connections NFs hold: one client per (sender, receiver) pair. */
export interface ConnectionPool {
  /** The client `from` uses to reach `to` (opened on first use, then reused). */
  client(from: NfType, to: NfType): Promise<SbiClient>;
}

/**
 * Cached NRF discovery results per (requester, target), valid for the
 * `validityPeriod` the NRF gave (TS 29.510 §6.2.6.2.2), as an NF keeps them.
 */
export class DiscoveryCache {
  #until = new Map<string, number>();
  /** Whether `from` holds a valid result for `target` at `nowMs`. */
  valid(from: NfType, target: NfType, nowMs: number): boolean {
    return (this.#until.get(`${from}/${target}`) ?? -Infinity) > nowMs;
  }
  /** Stores a result valid for `seconds` from `nowMs`. */
  store(from: NfType, target: NfType, nowMs: number, seconds: number): void {
    this.#until.set(`${from}/${target}`, nowMs + seconds * 1000);
  }
}

/** What happened to one step. */
export interface StepOutcome {
  /** The step's name. */
  step: string;
  /** Time from the first attempt's send to the final answer (ns); 0 when skipped. */
  ns: number;
  /** Final status, when an answer came. */
  status?: number;
  /** Attempts made (1 without retries; 0 when skipped from the discovery cache). */
  attempts: number;
}

/** What happened to one flow. */
export interface FlowOutcome {
  /** The flow's name. */
  flow: string;
  /** Whether every step succeeded. */
  ok: boolean;
  /** Clock reading when the first request was sent (ms). */
  startMs: number;
  /** Clock reading when the last answer came (ms). */
  endMs: number;
  /** One outcome per step reached, in order. */
  steps: StepOutcome[];
  /** Name of the step that failed. */
  failedStep?: string;
  /** Why it failed, one line. */
  error?: string;
  /** Retried requests in this flow. */
  retries: number;
}

/** Options for {@link runFlow} and {@link runStep}. */
export interface FlowRunOptions {
  /** Connections per NF pair. */
  pool: ConnectionPool;
  /** Discovery results the NFs hold. Default a fresh cache (every discovery is sent). */
  discovery?: DiscoveryCache;
  /** Clock in ms. Default `performance.now`. */
  clock?: Clock;
  /** Per-request timeout (ms). Default 10000. */
  timeoutMs?: number;
  /** Extra attempts of a request that throws (timeout, reset). Default 1. */
  retries?: number;
  /** Called with every response, for tests that compare bytes. */
  onResponse?: (step: FlowStep, response: ClientResponse) => void;
}

/** Raised when a step fails: no answer, a wrong status, or a field the flow needs is missing. */
export class StepError extends Error {
  /** What the step did before it failed. */
  readonly outcome: StepOutcome;
  constructor(message: string, outcome: StepOutcome) {
    super(`${outcome.step}: ${message}`);
    this.name = "StepError";
    this.outcome = outcome;
  }
}

const decoder = new TextDecoder();

/** Fills `{name}` (percent-encoded) and `{+name}` (as is) from `vars`. */
export function fillTemplate(template: string, vars: FlowVars): string {
  return template.replace(/\{(\+?)([A-Za-z0-9_]+)\}/g, (_, raw: string, name: string) => {
    const v = vars[name];
    if (v === undefined) throw new RangeError(`Flow variable ${name} is not set`);
    return raw ? v : encodeURIComponent(v);
  });
}

/** The JSON of a response: its body, or the first part of a multipart body. */
function responseJson(res: ClientResponse): unknown {
  let bytes = res.body;
  const type = res.headers["content-type"];
  if (isMultipartRelated(type)) bytes = parseMultipart(res.body, type!)[0]?.body ?? bytes;
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch {
    return undefined;
  }
}

function pointerValue(doc: unknown, pointer: string): unknown {
  let v = doc;
  for (const token of parsePointer(pointer)) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[token];
  }
  return v;
}

function captured(res: ClientResponse, json: () => unknown, c: Capture): string | undefined {
  if (c.from === "json") {
    const v = pointerValue(json(), c.pointer);
    return typeof v === "string" || typeof v === "number" ? String(v) : undefined;
  }
  const location = res.headers["location"];
  if (!location) return undefined;
  const path = new URL(location, "http://location.invalid").pathname;
  return c.from === "location-path" ? path : path.split("/").filter(Boolean).at(-1);
}

function problemCause(json: () => unknown): string {
  const cause = pointerValue(json(), "/cause");
  return typeof cause === "string" ? ` (${cause})` : "";
}

/**
 * Sends one step with `vars` (captures are written into `vars`) and returns
 * its outcome; throws {@link StepError} when it fails. `from` overrides the
 * step's sender (heartbeats and registrations run for each NF).
 */
export async function runStep(
  step: FlowStep,
  vars: FlowVars,
  options: FlowRunOptions,
  from: NfType = step.from,
): Promise<StepOutcome> {
  const clock = options.clock ?? (() => performance.now());
  const retries = options.retries ?? 1;
  if (step.discover && options.discovery?.valid(from, step.discover, clock())) {
    return { step: step.name, ns: 0, attempts: 0 };
  }
  const path = fillTemplate(step.path, vars);
  const body = step.body ? BODIES[step.body](vars) : undefined;
  const client = await options.pool.client(from, step.to);
  const t0 = clock();
  let res: ClientResponse | undefined;
  let attempts = 0;
  let lastError: unknown;
  while (res === undefined && attempts <= retries) {
    attempts++;
    try {
      res = await client.request({
        method: step.method,
        path,
        body: body?.bytes,
        headers: body ? { "content-type": body.contentType } : undefined,
        timeoutMs: options.timeoutMs ?? 10_000,
      });
    } catch (err) {
      lastError = err;
    }
  }
  const ns = (clock() - t0) * 1e6;
  if (res === undefined) {
    const why = lastError instanceof Error ? lastError.message : String(lastError);
    throw new StepError(why.split("\n")[0], { step: step.name, ns, attempts });
  }
  options.onResponse?.(step, res);
  const outcome: StepOutcome = { step: step.name, ns, status: res.status, attempts };
  let parsed: unknown;
  let didParse = false;
  const json = () => {
    if (!didParse) parsed = responseJson(res!);
    didParse = true;
    return parsed;
  };
  const fail = (message: string) => new StepError(message, outcome);
  if (!step.expect.includes(res.status)) {
    throw fail(
      `answered ${res.status}${problemCause(json)}, expected ${step.expect.join(" or ")}`,
    );
  }
  for (const [pointer, want] of Object.entries(step.require ?? {})) {
    const got = pointerValue(json(), pointer);
    if (got !== want) throw fail(`${pointer} is ${JSON.stringify(got)}, expected ${want}`);
  }
  for (const [name, c] of Object.entries(step.capture ?? {})) {
    const v = captured(res, json, c);
    if (v === undefined) throw fail(`answer lacks ${c.from === "json" ? c.pointer : "Location"}`);
    vars[name] = v;
  }
  if (step.discover) {
    const seconds = pointerValue(json(), "/validityPeriod");
    if (typeof seconds === "number" && seconds > 0) {
      options.discovery?.store(from, step.discover, clock(), seconds);
    }
  }
  return outcome;
}

/** Runs a flow's steps in order for one UE; never throws for a failed step. */
export async function runFlow(
  flow: FlowDefinition,
  vars: FlowVars,
  options: FlowRunOptions,
): Promise<FlowOutcome> {
  const clock = options.clock ?? (() => performance.now());
  const steps: StepOutcome[] = [];
  const startMs = clock();
  let retries = 0;
  for (const step of flow.steps) {
    try {
      const o = await runStep(step, vars, options);
      steps.push(o);
      retries += Math.max(0, o.attempts - 1);
    } catch (err) {
      const outcome = err instanceof StepError ? err.outcome : undefined;
      if (outcome) {
        steps.push(outcome);
        retries += Math.max(0, outcome.attempts - 1);
      }
      return {
        flow: flow.name,
        ok: false,
        startMs,
        endMs: clock(),
        steps,
        failedStep: step.name,
        error: (err as Error).message.split("\n")[0],
        retries,
      };
    }
  }
  return { flow: flow.name, ok: true, startMs, endMs: clock(), steps, retries };
}

/** The variables of UE number `index` (SUPI, SUCI, MSIN, PDU session id, UE address). */
export function ueVars(index: number, base = 0): FlowVars {
  const n = base + index;
  const msin = String(n % 1e10).padStart(10, "0");
  return {
    msin,
    supi: `imsi-00101${msin}`,
    suci: `suci-0-001-01-0000-0-0-${msin}`,
    pduSessionId: "1",
    ueIpv4: `10.${(n >> 16) & 0xff}.${(n >> 8) & 0xff}.${(n & 0xff) || 1}`,
  };
}
