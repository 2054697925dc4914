/**
 * The QUIC interop runner's matrix (quic-interop/quic-interop-runner,
 * testcases.py) for one pairing: our h3 client against a server (ours,
 * `gtlsserver`, or any URL), or `gtlsclient` against our server. Every case
 * ends as pass, fail or unsupported with a one-line reason; cases that need
 * an impaired path run across the link emulator (see `link_cases.ts`).
 */
import { createDevPki } from "../transports/pki.ts";
import { INVALID_TRANSPORT_PARAMETERS } from "./mod.ts";
import type { Ctx, InteropOptions } from "./_case_context.ts";
import { serverCase } from "./server_cases.ts";
import { clientCase } from "./client_cases.ts";
import type { CaseStatus, MatrixRow } from "./row.ts";

export type { CaseStatus, InteropOptions, MatrixRow };

/** Every case `lab interop` knows, in the runner's order. */
export const INTEROP_CASES: readonly string[] = [
  "handshake",
  "transfer",
  "multiplexing",
  "retry",
  "resumption",
  "zerortt",
  "http3",
  "chacha20",
  "keyupdate",
  "ecn",
  "v2",
  "multiconnect",
  "versionnegotiation",
  ...INVALID_TRANSPORT_PARAMETERS.map((p) => `transportparameters:${p}`),
  "handshakeloss",
  "transferloss",
  "blackhole",
  "handshakecorruption",
  "transfercorruption",
  "amplificationlimit",
  "rebind-port",
  "rebind-addr",
  "connectionmigration",
];

/**
 * Runs the chosen cases in turn and resolves with the matrix.
 * @throws {RangeError} for an unknown case name
 */
export async function runInterop(options: InteropOptions = {}): Promise<MatrixRow[]> {
  const cases = options.cases ?? INTEROP_CASES;
  for (const c of cases) {
    if (!INTEROP_CASES.includes(c)) {
      throw new RangeError(`Unknown case ${c} (known: ${INTEROP_CASES.join(", ")})`);
    }
  }
  const ctx: Ctx = { pki: await createDevPki(), options, server: options.server ?? "ours" };
  const rows: MatrixRow[] = [];
  for (const name of cases) {
    let r: MatrixRow;
    try {
      r = options.client ? await clientCase(ctx, name) : await serverCase(ctx, name);
    } catch (err) {
      if (err instanceof RangeError) throw err;
      r = { name, status: "fail", reason: (err as Error).message.split("\n")[0] };
    }
    rows.push(r);
    options.onRow?.(r);
  }
  return rows;
}

/** One matrix line: the case, its status, the reason. */
export function formatRow(r: MatrixRow): string {
  return `${r.name.padEnd(47)} ${r.status.padEnd(11)} ${r.reason}`;
}

/** True when no supported case failed. */
export function matrixPassed(rows: readonly MatrixRow[]): boolean {
  return rows.every((r) => r.status !== "fail");
}
