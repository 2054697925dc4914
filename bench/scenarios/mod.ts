/**
 * The scenarios, one file each named after it (`rtt.ts` and `rtt_rounds.ts`
 * for its two schedules, the latter's floor and bare runtime arms in
 * `rtt_floor_arms.ts`, `peers.ts` for the lab measuring itself against C
 * peers, with its loaders, servers and pairs in `peer_*.ts`), with what every scenario gets from the runner (`context.ts`) and the
 * native load engine's rows (`native_load.ts`). Imports bench/measure/,
 * bench/record/, bench/stats/ and the floors below bench/, never the runner
 * or a report.
 */
export {
  floorFor,
  getPayload,
  makeRow,
  type OpenClientOptions,
  payloadPath,
  postEcho,
  type Scenario,
  type ScenarioContext,
  type TargetRequest,
} from "./context.ts";
export { parseH2loadOutput } from "./peer_loaders.ts";
