/** What every scenario gets from the runner, and the helpers they share. */
import type { ClientOptions, SbiClient, TransportName } from "../../transports/types.ts";
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
