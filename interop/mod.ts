/**
 * QUIC interop runner cases (quic-interop/quic-interop-runner, testcases.py)
 * as reusable checks against any HTTP/3 server: ours or an independent one
 * such as ngtcp2's `gtlsserver`. Each check returns a {@linkcode CaseResult}
 * naming what it saw; none throws for a failing peer. A `lab interop` command
 * can print these as the runner's matrix.
 *
 * Cases that need a misbehaving client (invalid transport parameters) run the
 * module's probe program (native/probe.c); the others use our own client.
 */
import { ensureBuilt } from "../lib/native_build.ts";
import type { TlsMaterial } from "../transports/tls.ts";
import { createNativeH3Client, type H3ClientOptions } from "../transports/h3/client.ts";

/** The outcome of one case against one peer. */
export interface CaseResult {
  /** The runner's case name, with the variant after a colon where there are several. */
  name: string;
  /** Whether the peer behaved as the case requires. */
  passed: boolean;
  /** What was seen, in one line. */
  detail: string;
}

/** Where a check sends its requests. */
export interface Target {
  /** `https://host:port` of the server. */
  origin: string;
  /** Trust for our client. Default: no verification (interop peers use throwaway certificates). */
  tls?: TlsMaterial;
  /** The path that returns `size` bytes. Default sbilab's `/nbench/v1/payload?size=N`; gtlsserver serves `/N`. */
  pathFor?: (size: number) => string;
  /** Per-request timeout in ms. Default 10000. */
  timeoutMs?: number;
}

/** The transport parameters a client sends invalid in the runner's "handshake with bad transport parameters" checks. */
export const INVALID_TRANSPORT_PARAMETERS = [
  "ack_delay_exponent",
  "max_udp_payload_size",
  "max_ack_delay",
  "active_connection_id_limit",
] as const;

const TRANSPORT_PARAMETER_ERROR = 0x08;

function sbilabPath(size: number): string {
  return `/nbench/v1/payload?size=${size}`;
}

/** Our client for `target`, with `extra` options. */
function clientFor(target: Target, extra: H3ClientOptions = {}) {
  return createNativeH3Client(target.origin, {
    tls: target.tls ?? { insecure: true },
    timeoutMs: target.timeoutMs ?? 10_000,
    ...extra,
  });
}

/**
 * A ClientHello that fits one Initial and carries `parameter` out of range
 * must be answered with CONNECTION_CLOSE TRANSPORT_PARAMETER_ERROR (0x08)
 * within `withinMs`.
 */
export async function checkInvalidTransportParameter(
  host: string,
  port: number,
  parameter: (typeof INVALID_TRANSPORT_PARAMETERS)[number],
  withinMs = 1000,
): Promise<CaseResult> {
  const name = `transportparameters:${parameter}`;
  const probe = await ensureBuilt("h3_probe", { quiet: true });
  const out = await new Deno.Command(probe, {
    args: ["badtp", parameter, host, String(port)],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(10_000),
  }).output();
  const line = new TextDecoder().decode(out.stdout).trim() ||
    new TextDecoder().decode(out.stderr).trim();
  const m = /^closed in (\d+) ms: .*transport error 0x([0-9a-f]+)$/.exec(line);
  const passed = m !== null && parseInt(m[2], 16) === TRANSPORT_PARAMETER_ERROR &&
    Number(m[1]) <= withinMs;
  return { name, passed, detail: line };
}

/** The runner's "retry": the handshake goes through one Retry, then the transfer completes. */
export async function checkRetry(target: Target): Promise<CaseResult> {
  const client = await clientFor(target);
  try {
    const size = 16 * 1024;
    const res = await client.request({ path: (target.pathFor ?? sbilabPath)(size) });
    const st = client.datagramStats();
    const passed = res.status === 200 && res.body.length === size && st?.retries === 1;
    return {
      name: "retry",
      passed,
      detail: `status ${res.status}, ${res.body.length} bytes, ${st?.retries ?? 0} Retry, ${
        st?.newTokens ?? 0
      } NEW_TOKEN`,
    };
  } catch (err) {
    return { name: "retry", passed: false, detail: (err as Error).message };
  } finally {
    await client.close();
  }
}

/** The runner's "keyupdate": our client updates the 1-RTT keys mid-transfer; every byte still arrives. */
export async function checkKeyUpdate(target: Target): Promise<CaseResult> {
  const client = await clientFor(target);
  const path = (target.pathFor ?? sbilabPath)(1024 * 1024);
  try {
    const first = await client.request({ path });
    const updated = client.updateKey();
    const rest = await Promise.all([1, 2, 3].map(() => client.request({ path })));
    const st = client.datagramStats();
    const sizes = [first, ...rest].map((r) => r.body.length);
    const passed = updated && sizes.every((n) => n === 1024 * 1024) &&
      (st?.keyUpdates ?? 0) >= 1;
    return {
      name: "keyupdate",
      passed,
      detail: `update ${updated ? "started" : "refused"}, ${
        st?.keyUpdates ?? 0
      } key update(s), bodies ${sizes.join(", ")}`,
    };
  } catch (err) {
    return { name: "keyupdate", passed: false, detail: (err as Error).message };
  } finally {
    await client.close();
  }
}
