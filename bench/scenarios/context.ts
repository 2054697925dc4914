/** What every scenario gets from the runner, and the helpers they share. */
import type { ClientOptions, SbiClient, TransportName } from "../../transports/types.ts";
import { countStatus, isAccepted, type StatusSet } from "../../lib/status_set.ts";
import { formatBytes } from "../../lib/units.ts";
import { estimateSampleSet, type SampleSet } from "../stats/recorder.ts";
import type { Clock, SamplingPlan } from "../measure/sampler.ts";
import type { Endpoints } from "../measure/servers.ts";
import type { ResultRow, RoundsRecord, RunConfig } from "../record/schema.ts";

/** What a scenario may choose about a client it opens. */
export type OpenClientOptions =
  & { origin?: string }
  & Pick<
    ClientOptions,
    "nfType" | "resumption" | "earlyData" | "ticketCache" | "tls" | "timeoutMs"
  >;

/** Everything a scenario needs; it returns rows and may push notes. */
export interface ScenarioContext {
  /** Where to send requests. */
  endpoints: Endpoints;
  /** Transports to measure, in report order. */
  transports: TransportName[];
  /** Body sizes in bytes. */
  sizes: number[];
  /** Warm-up and sampling budget of one row. */
  plan: SamplingPlan;
  /** Injected clock. */
  clock: Clock;
  /** The run's configuration. */
  config: RunConfig;
  /** Sentences for the report (skips, caveats). */
  notes: string[];
  /**
   * Opens a client (one connection) for a transport: to its endpoint, or to
   * `options.origin`; `options.nfType` names the sender in `User-Agent`;
   * `resumption`, `earlyData` and `ticketCache` as in `ClientOptions`.
   */
  openClient(
    transport: TransportName,
    options?: OpenClientOptions,
  ): Promise<SbiClient>;
  /** Reports progress of the current row (label, 0…1). */
  onProgress(label: string, fraction: number): void;
  /** Reports a finished row. */
  onRow(row: ResultRow): void;
  /** Moves the client to a new source port mid-run (a `--link` run's NAT rebinding). */
  rebind?: () => Promise<void>;
  /** Aborts the run early. */
  signal?: AbortSignal;
  /** A scenario that runs its own interleaved rounds reports their schedule, ratios and noise. */
  onRounds?(record: RoundsRecord): void;
  /** The request every row sends instead of the payload GET (`--path`, `-X`, `-H`, `-d`). */
  request?: TargetRequest;
  /** The statuses that count as a success. Default 2xx and 3xx. */
  ok?: StatusSet;
}

/** A request given for a target: what every row sends instead of the payload GET. */
export interface TargetRequest {
  method: string;
  /** Path and query. */
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array;
}

/** What a row's requests are, for its label: `GET 256 B` or `GET /nnrf-disc/v1/nf-instances?…`. */
export function requestLabel(ctx: ScenarioContext, size: number): string {
  const r = ctx.request;
  if (!r) return `GET ${formatBytes(size)}`;
  return `${r.method} ${r.path}${r.body ? ` (${formatBytes(r.body.length)} body)` : ""}`;
}

/** The native engine's request fields for a row: the target request, or the payload GET. */
export function engineRequest(
  ctx: ScenarioContext,
  size: number,
): { path: string; method?: string; headers?: Record<string, string>; body?: Uint8Array } {
  const r = ctx.request;
  if (!r) return { path: payloadPath(size) };
  return {
    path: r.path,
    method: r.method,
    headers: r.headers,
    ...(r.body ? { body: r.body } : {}),
  };
}

/**
 * Status counts of one row's responses, split by the accepted set: the row
 * keeps `status` and `failed` from it.
 */
export class StatusTally {
  readonly status: Record<string, number> = {};
  failed = 0;
  readonly #ok: StatusSet | undefined;

  constructor(ok?: StatusSet) {
    this.#ok = ok;
  }

  /** Counts one response; returns whether it succeeded. */
  add(status: number): boolean {
    countStatus(this.status, status);
    const good = this.#ok ? isAccepted(this.#ok, status) : status >= 200 && status < 400;
    if (!good) this.failed++;
    return good;
  }

  /** The row fields: `status` and `failed`. */
  fields(): { status: Record<string, number>; failed: number } {
    return { status: { ...this.status }, failed: this.failed };
  }
}

/**
 * One request of a row, its status counted in `tally`: the target request,
 * or the payload GET (whose length is checked when its status succeeded).
 * A status outside the accepted set is counted as failed, not thrown, so the
 * row keeps its latency as h2load does and the run names the failures.
 */
export async function rowRequest(
  ctx: ScenarioContext,
  client: SbiClient,
  size: number,
  tally: StatusTally,
  timeoutMs?: number,
): Promise<void> {
  const r = ctx.request;
  const res = await client.request(
    r
      ? { method: r.method, path: r.path, headers: r.headers, body: r.body, timeoutMs }
      : { path: payloadPath(size), timeoutMs },
  );
  const good = tally.add(res.status);
  if (!r && good && res.body.length !== size) {
    throw new Error(
      `GET ${payloadPath(size)} answered ${res.status} with ${res.body.length} bytes`,
    );
  }
}

/** A scenario: measures rows. */
export type Scenario = (ctx: ScenarioContext) => Promise<ResultRow[]>;

/** Builds a row from a sample set and the fields that identify it (engine default `sbi`). */
export function makeRow(
  fields: Omit<ResultRow, "estimate" | "samples" | "errors"> & { errors?: number },
  samples: SampleSet,
): ResultRow {
  return {
    ...fields,
    engine: fields.engine ?? "sbi",
    errors: fields.errors ?? 0,
    estimate: estimateSampleSet(samples),
    samples,
  };
}

/** The floor kind matching a transport: UDP for h3, TCP otherwise. */
export function floorFor(transport: string): "tcp" | "udp" {
  return transport === "h3" ? "udp" : "tcp";
}

/** Path of the benchmark payload route. */
export function payloadPath(size: number): string {
  return `/nbench/v1/payload?size=${size}`;
}

/** Sends a GET for `size` bytes and checks status and length; throws on a mismatch. */
export async function getPayload(
  client: SbiClient,
  size: number,
  timeoutMs?: number,
): Promise<void> {
  const res = await client.request({ path: payloadPath(size), timeoutMs });
  if (res.status !== 200 || res.body.length !== size) {
    throw new Error(
      `GET ${payloadPath(size)} answered ${res.status} with ${res.body.length} bytes`,
    );
  }
}

/** Sends a POST of `body` to the echo route and checks the echo's length. */
export async function postEcho(
  client: SbiClient,
  body: Uint8Array,
  timeoutMs?: number,
): Promise<void> {
  const res = await client.request({
    method: "POST",
    path: "/nbench/v1/echo",
    body,
    headers: { "content-type": "application/octet-stream" },
    timeoutMs,
  });
  if (res.status !== 200 || res.body.length !== body.length) {
    throw new Error(`POST /nbench/v1/echo answered ${res.status} with ${res.body.length} bytes`);
  }
}
