/**
 * The runner: resolves the options, starts (or targets) the servers, measures
 * the floors and the chosen scenario, and returns one serialisable run record.
 * It never writes to the console; progress and rows go to callbacks.
 */
import { describePlacement, enablePlacement, placement } from "../measure/affinity.ts";
import { collectEnvironment } from "../measure/environment.ts";
import type { BenchRun } from "../record/schema.ts";
import type { BenchOptions } from "./options.ts";
import { resolveRun } from "./resolve.ts";
import { measureFloors } from "./measure_floors.ts";
import { runScenario } from "./run_scenario.ts";
import { assembleRecord } from "./assemble.ts";

export type { BenchOptions, ScenarioPlugin } from "./options.ts";
export { DEFAULT_SIZES, engineFor, NATIVE_SCENARIOS } from "./resolve.ts";

/**
 * Runs one benchmark and returns its record, in five steps: resolve the
 * options, start (environment, CPU placement), measure the floors on a quiet
 * machine, run the scenario against fresh servers, assemble the record.
 */
export async function runBench(options: BenchOptions = {}): Promise<BenchRun> {
  const wallStart = Date.now();
  const run = await resolveRun(options);
  const environment = await collectEnvironment();
  const ownProcess = run.config.serverMode === "process";
  enablePlacement(ownProcess);
  if (ownProcess) run.notes.push(`CPU placement: ${describePlacement(await placement())}.`);
  const floors = await measureFloors(run, options);
  const step = await runScenario(run, options, floors);
  const interrupted = options.signal?.aborted ?? false;
  return assembleRecord(run, { wallStart, environment }, floors, step, interrupted);
}
