/**
 * The set-up table of a `cold` run: per transport and way of starting a
 * connection, the median time to the end of each phase, and the same in round
 * trips (the link's configured RTT across `--link`, else the matching floor).
 */
import type { BenchRun, ResultRow } from "../record/schema.ts";
import { SETUP_PHASES, type SetupMode, setupModes } from "../record/setup_modes.ts";
import { floorMultiple } from "../record/floor_lookup.ts";
import { formatDuration } from "../../lib/units.ts";
import type { TransportName } from "../../transports/types.ts";

/** The round-trip unit of a run: the link's RTT, or the floor (per row). */
export function roundTripUnit(run: BenchRun): string {
  return run.config.link ? `RTT of ${run.config.link.spec} (${run.config.link.rttMs} ms)` : "floor";
}

/** A row's median in round trips: over the link's RTT, else its floor multiple. */
export function roundTrips(run: BenchRun, row: ResultRow): number | undefined {
  const rtt = run.config.link?.rttMs;
  if (rtt) return row.estimate.median / 1e6 / rtt;
  return floorMultiple(run, row);
}

/** Header and cells of the set-up table (empty body when the run has no phase rows). */
export function setupTable(run: BenchRun): { header: string[]; body: string[][] } {
  const cold = run.rows.filter((r) => r.scenario === "cold");
  const find = (t: string, mode: SetupMode, phase: string) =>
    cold.find((r) => r.transport === t && r.id.endsWith(`cold/${t}/${mode}/${phase}`));
  const unit = run.config.link ? "RTT" : "× floor";
  const body: string[][] = [];
  for (const t of [...new Set(cold.map((r) => r.transport))]) {
    for (const mode of setupModes(t as TransportName)) {
      const cells = SETUP_PHASES.map((phase) => {
        const r = find(t, mode, phase);
        if (!r) return "–";
        const n = roundTrips(run, r);
        return `${formatDuration(r.estimate.median)}${
          n === undefined ? "" : ` (${n.toFixed(2)} ${unit})`
        }`;
      });
      if (cells.every((c) => c === "–")) continue;
      body.push([t, mode, ...cells]);
    }
  }
  return {
    header: ["transport", "start", "connect", "TLS", "first byte", "total"],
    body,
  };
}
