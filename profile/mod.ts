/**
 * The profilers behind `lab profile`, pure functions over what the processes
 * recorded: where a request's CPU time goes (V8 CPU profiles), instructions
 * per request per object file (callgrind), and a warm connection's memory
 * growth. `cli/profile.ts` runs the processes; nothing here touches the
 * system but `readCallgrindFile` (it runs callgrind_annotate on a file).
 * Imports bench/report/ (for table layout) and lib/. The wake-up probe
 * (wakeup/, docs/wakeup.md) is a program of its own beside them.
 */
export {
  byPart,
  type CallgrindRun,
  type CallgrindSide,
  callgrindSide,
  JIT_OBJECT,
  objectRows,
  parseCallgrindOut,
  type Part,
  PART_TITLES,
  partOf,
  PARTS,
  perRequestByObject,
  perUnitByObject,
  readCallgrindFile,
  renderCallgrindSummary,
  renderObjectCosts,
  renderPartCosts,
} from "./callgrind.ts";
export {
  breakdown,
  busySamples,
  type CpuProfile,
  type CpuTime,
  parseCpuProfile,
  renderBreakdown,
} from "./cpu_profile.ts";
export {
  MEMORY_GROWTH_TARGET_BYTES,
  MEMORY_STEP_REQUESTS,
  type MemoryReadings,
  type MemoryRun,
  memoryRun,
  memorySide,
  renderMemoryRun,
} from "./memory_growth.ts";
