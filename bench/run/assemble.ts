/** The runner's last step: the run record from what the earlier steps measured. */
import type { StackName } from "../../transports/types.ts";
import {
  type BenchRun,
  type Environment,
  type RoundsRecord,
  SCHEMA_VERSION,
} from "../record/schema.ts";
import type { FloorsStep } from "./measure_floors.ts";
import type { ResolvedRun } from "./resolve.ts";
import type { ScenarioStep } from "./run_scenario.ts";

/** When the run started and what it ran on. */
export interface RunStart {
  /** Wall-clock start (ms since the epoch). */
  wallStart: number;
  environment: Environment;
}

/** A note when the TLS transports negotiated different suites or groups. */
function suitesNote(connections: ScenarioStep["connections"]): string | undefined {
  const suites = new Set(
    Object.values(connections).filter((i) => i?.tls?.suite).map((i) =>
      `${i!.tls!.suite}/${i!.tls!.group}`
    ),
  );
  if (suites.size <= 1) return undefined;
  return `The TLS transports negotiated different suites or groups (${
    [...suites].join(", ")
  }): their rows do not compare like with like.`;
}

/** The run record: config, environment, floors, rows named by stack, connections and notes. */
export function assembleRecord(
  run: ResolvedRun,
  start: RunStart,
  floors: FloorsStep,
  step: ScenarioStep,
  interrupted: boolean,
): BenchRun {
  const { stack, notes } = run;
  if (interrupted) notes.push("The run was interrupted; rows may be incomplete.");
  const suites = suitesNote(step.connections);
  if (suites) notes.push(suites);
  return {
    schema: SCHEMA_VERSION,
    startedAt: new Date(start.wallStart).toISOString(),
    durationMs: Date.now() - start.wallStart,
    config: run.config,
    environment: start.environment,
    floors: { rows: [...floors.rows, ...step.floors], skipped: floors.skipped },
    rows: step.rows.map((r) => ({ ...r, stack, id: `${stack}/${r.id}` })),
    connections: step.connections,
    notes,
    ...(step.rounds ? { rounds: prefixRoundIds(step.rounds, stack) } : {}),
  };
}

/** The rounds record with its row ids named like the rows (`<stack>/rtt/…`). */
function prefixRoundIds(r: RoundsRecord, stack: StackName): RoundsRecord {
  const id = (x: string) => (/^(rtt|peers)\//.test(x) ? `${stack}/${x}` : x);
  return {
    ...r,
    order: r.order.map((o) => o.map(id)),
    ratios: r.ratios.map((x) => ({
      ...x,
      id: id(x.id),
      numerator: id(x.numerator),
      denominator: id(x.denominator),
    })),
    ...(r.added ? { added: r.added.map((x) => ({ ...x, id: id(x.id), row: id(x.row) })) } : {}),
    noise: {
      ...r.noise,
      armCv: Object.fromEntries(Object.entries(r.noise.armCv).map(([k, v]) => [id(k), v])),
    },
  };
}
