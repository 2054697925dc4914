/** What `runBench` takes: its options, and the shape of a scenario a higher layer supplies. */
import type { StackName, TransportName } from "../../transports/types.ts";
import type { Clock } from "../measure/sampler.ts";
import type { MachineProbe } from "../measure/machine_probe.ts";
import type {
  FloorRow,
  LinkRecord,
  ResultRow,
  RunConfig,
  ScenarioName,
  Schedule,
} from "../record/schema.ts";
import type { Scenario, TargetRequest } from "../scenarios/context.ts";
import type { StatusSet } from "../../lib/status_set.ts";

/** Options of `runBench`. */
export interface BenchOptions {
  /** Scenario. Default `rtt`. */
  scenario?: ScenarioName;
  /** Implementation family of servers and clients. Default `native` (or `SBILAB_STACK`). */
  stack?: StackName;
  /** Transports. Default every available one on the stack (or the target's). */
  transports?: TransportName[];
  /** Body sizes in bytes. Default [256, 16384]. */
  sizes?: number[];
  /** Warm-up per row in ms. Default 3000 (300 with `quick`). */
  warmupMs?: number;
  /** Sampling per row in ms. Default 5000 (700 with `quick`). */
  sampleMs?: number;
  /** Fixed number of samples per row (sampling then stops at the count or at 60 s). */
  samples?: number;
  /** A run of a few seconds. Default false. */
  quick?: boolean;
  /** Servers in this process. Default false (own process). */
  inProcess?: boolean;
  /** Benchmark a server elsewhere; floors are skipped. */
  target?: string;
  /** h3's own URL when it does not listen at the target's port (else Alt-Svc, else the target). */
  targetH3?: string;
  /** CA file for an https target. */
  caFile?: string;
  /** Skip certificate verification for an https target. */
  insecure?: boolean;
  /** Handler delay in ms passed to the server. Default 0. */
  delayMs?: number;
  /** Open-loop rate for `rate` (req/s). Default 1000. */
  rate?: number;
  /** In-flight levels for `concurrency`. Default [1, 8, 64, 256]. */
  concurrency?: number[];
  /** Concurrent streams on one connection for `hol`. Default 16. */
  streams?: number;
  /** Streams `flows` measures (`journey`, `warm-get`). Default both. */
  flows?: string[];
  /** The emulated link this run crosses (recorded in the run's config). Default none. */
  link?: LinkRecord;
  /** Moves the client to a new source port (the link's NAT rebinding); `migration` needs it. */
  rebind?: () => Promise<void>;
  /** What sends the requests: `native` (the load engine in the transport's C module; the
   * default for concurrency, rate, bulk and capacity) or `sbi` (the full SBI client; the default
   * and the only choice for the other scenarios). */
  engine?: "native" | "sbi";
  /** p99 bound of the `capacity` scenario in ms. Default 10. */
  p99BoundMs?: number;
  /** How arms share the run: `interleaved` rounds (the default for `rtt`) or `sequential`
   * (one row after another; every other scenario runs so). */
  schedule?: Schedule;
  /** Interleaved: measured rounds. Default {@linkcode DEFAULT_ROUNDS} (quick 10). */
  rounds?: number;
  /** Interleaved: block per arm and round in ms. Default {@linkcode DEFAULT_BLOCK_MS} (quick 20). */
  blockMs?: number;
  /** Interleaved: seed of the round orders. Default a random one (recorded in the run). */
  seed?: number;
  /** Reads the machine during interleaved rounds. Default `/proc` (none elsewhere). */
  probe?: MachineProbe;
  /** Skip the floors. Default false. */
  skipFloors?: boolean;
  /** Clock. Default `performance.now`. */
  clock?: Clock;
  /** Progress of the current step (label, 0…1). */
  onProgress?: (label: string, fraction: number) => void;
  /** Called with each finished row. */
  onRow?: (row: ResultRow) => void;
  /** Called with each finished floor. */
  onFloor?: (floor: FloorRow) => void;
  /** Stops the run early. */
  signal?: AbortSignal;
  /** Scenarios a higher layer supplies (the study's `flows`). Default none. */
  plugins?: Partial<Record<ScenarioName, ScenarioPlugin>>;
  /** The request every row sends instead of the payload GET (rtt, concurrency, rate, capacity,
   * cold). Default: the payload GET of each size. */
  request?: TargetRequest;
  /** The statuses that count as a success. Default 2xx and 3xx. */
  ok?: StatusSet;
}

/** A scenario supplied from above the benchmark: how it runs and what it adds to the config. */
export interface ScenarioPlugin {
  /** Runs the scenario's rows. */
  run: Scenario;
  /** Checks the options (throws `RangeError`) and returns the config fields the scenario sets. */
  configure(options: BenchOptions): Partial<RunConfig>;
}
