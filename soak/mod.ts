/**
 * The soak, a reliability tool rather than a benchmark: a steady open-loop
 * load on every transport while attackers (slow readers, stream floods,
 * malformed frames, discovery floods, handshake floods, ...) run beside it
 * against `lab serve`, recorded per interval, held to bounds and rendered
 * for the terminal. Imports bench/ through its rooms'
 * `mod.ts` and the floors below bench/.
 */
export { type AttackName, ATTACKS, noAttacks, runAttackers } from "./attackers.ts";
export {
  crossedBounds,
  DEFAULT_SOAK_BOUNDS,
  runSoak,
  type SoakBounds,
  type SoakInterval,
  type SoakOptions,
  type SoakReport,
} from "./soak.ts";
export { type FloodCounts, floodHandshakes } from "./handshake_flood.ts";
export { renderSoakInterval, renderSoakSummary } from "./soak_report.ts";
