/**
 * The floor arms of `rtt` in interleaved rounds: the kernel and runtime
 * floors of every size and, on the deno stack, the bare runtime arms (each
 * transport's request on the runtime alone, see `bare_runtime.ts`). A floor
 * that cannot run becomes a note of the run.
 */
import { FloorError, kernelPingPong, openRuntimeEcho } from "../measure/floors.ts";
import {
  BARE_TRANSPORTS,
  type BareRuntime,
  type BareTransport,
  openBareRuntime,
} from "../measure/bare_runtime.ts";
import type { RoundArm } from "../measure/rounds.ts";
import { floorId } from "../record/rounds_summary.ts";
import type { FloorKind, FloorSource } from "../record/schema.ts";
import { floorFor, type ScenarioContext } from "./context.ts";

/** A floor arm: one floor at one size (a bare or stacks-alone arm names its transport). */
export interface FloorArm {
  id: string;
  source: FloorSource;
  protocol: FloorKind;
  size: number;
  transport?: string;
}

/** The floor arms of a run under construction, and the echoes (and hosts) to close after it. */
export interface FloorArms {
  arms: RoundArm[];
  floorArms: FloorArm[];
  echoes: { close(): Promise<void> }[];
}

/** Turns one operation into a block of an arm (timed by the run's block rule). */
export type BlockOf = (op: () => Promise<unknown>) => RoundArm["block"];

/** Adds the kernel and runtime floor arms of every size; a floor that cannot run becomes a note. */
export async function addFloorArms(
  ctx: ScenarioContext,
  a: FloorArms,
  block: BlockOf,
  sizes: number[],
): Promise<void> {
  for (const size of sizes) {
    for (const protocol of ["tcp", "udp"] as const) {
      const kid = floorId({ source: "kernel", protocol, sizeBytes: size });
      try {
        await kernelPingPong(protocol, size, 50, 100, 10, 0); // built and runnable
        a.floorArms.push({ id: kid, source: "kernel", protocol, size });
        a.arms.push({
          id: kid,
          // A block on a starved machine may record few round trips, or fail: the round keeps
          // what it got (an empty block drops that round from this floor's ratios).
          block: (ms) =>
            kernelPingPong(protocol, size, 1_000_000, ms, 50, 0).then(
              (samples) => ({ samples, errors: 0 }),
              (err) => {
                if (!(err instanceof FloorError)) throw err;
                return { samples: [], errors: 1 };
              },
            ),
        });
      } catch (err) {
        if (!(err instanceof FloorError || (err as Error).name === "NativeBuildError")) throw err;
        ctx.notes.push(
          `The kernel ${protocol} floor at ${size} B was not measured: ${(err as Error).message}.`,
        );
      }
      const rid = floorId({ source: "runtime", protocol, sizeBytes: size });
      try {
        const echo = await openRuntimeEcho(protocol, size);
        a.echoes.push(echo);
        a.floorArms.push({ id: rid, source: "runtime", protocol, size });
        a.arms.push({ id: rid, block: block(() => echo.roundTrip()) });
      } catch (err) {
        if (!(err instanceof FloorError)) throw err;
        ctx.notes.push(
          `The runtime ${protocol} floor at ${size} B was not measured: ${(err as Error).message}.`,
        );
      }
    }
  }
}

/**
 * The deno stack's bare runtime arms: per transport of the run and size, the
 * same request on the runtime alone (see `bare_runtime.ts`), so each row shows
 * its multiple of its own runtime. Arms that cannot run become a note.
 */
export async function addBareArms(
  ctx: ScenarioContext,
  a: FloorArms,
  block: BlockOf,
  sizes: number[],
): Promise<void> {
  const transports = ctx.transports.filter((t): t is BareTransport =>
    (BARE_TRANSPORTS as readonly string[]).includes(t)
  );
  if (transports.length === 0 || sizes.length === 0) return;
  let bare: BareRuntime;
  try {
    bare = await openBareRuntime();
  } catch (err) {
    if (!(err instanceof FloorError)) throw err;
    ctx.notes.push(`The bare runtime arms were not measured: ${err.message}.`);
    return;
  }
  a.echoes.push(bare);
  for (const transport of transports) {
    for (const size of sizes) {
      const protocol = floorFor(transport);
      const id = floorId({ source: "bare", protocol, sizeBytes: size, transport });
      a.floorArms.push({ id, source: "bare", protocol, size, transport });
      a.arms.push({ id, block: block(() => bare.request(transport, size)) });
    }
  }
}
