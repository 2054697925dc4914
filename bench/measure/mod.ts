/**
 * The instruments a run measures with: the sampler (an injected clock, warm-up
 * then samples), interleaved rounds, the servers under test and targets
 * elsewhere, the machine's floors, CPU placement, machine and environment
 * probes. Imports bench/record/, bench/stats/ and the floors below bench/
 * (lib/, transports/, load/), never a scenario, the runner or a report.
 */
export { describePlacement, enablePlacement, onServerCpu, placement } from "./affinity.ts";
export { collectEnvironment } from "./environment.ts";
export { FloorError, measureKernelFloor, measureRuntimeFloor } from "./floors.ts";
export { type MachineProbe, parseProcStat, procMachineProbe } from "./machine_probe.ts";
export { DEFAULT_BLOCK_MS, DEFAULT_ROUNDS, type RoundArm, runRounds } from "./rounds.ts";
export {
  type Clock,
  defaultClock,
  sampleOpenLoop,
  sampleOperation,
  type SamplingPlan,
} from "./sampler.ts";
export { type Endpoints, parseTargetList, startServers } from "./servers.ts";
