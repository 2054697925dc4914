/**
 * The `netem` link backend: a veth pair whose two ends egress through
 * `tc qdisc … netem`. Only for hosts whose kernel has sch_netem.
 *
 * @module
 */
import { run } from "./_system.ts";
import type { DirectionSpec, LinkSpec } from "./link_spec.ts";

/**
 * `tc` arguments (after `tc -n NS`) that shape `dev`'s egress as `d` says.
 * Bursts map to netem's Gilbert-Elliott model with the same long-run loss
 * and mean burst length (bursts are then geometric, not capped). Pure.
 */
export function netemQdiscArgs(dev: string, d: DirectionSpec): string[] {
  const args = ["qdisc", "add", "dev", dev, "root", "netem"];
  const us = (ms: number) => `${Math.round(ms * 1000)}us`;
  if (d.delayMs > 0 || d.jitterMs > 0 || d.reorder > 0) {
    args.push("delay", us(d.delayMs));
    if (d.jitterMs > 0) args.push(us(d.jitterMs));
  }
  if (d.loss > 0) {
    if (d.burst > 1) {
      const r = 2 / (d.burst + 1); // leave the bad state after a mean burst of (B+1)/2
      const p = (d.loss * r) / (1 - d.loss); // bad-state share equals the loss
      args.push("loss", "gemodel", pct(p), pct(r), "100%", "0%");
    } else {
      args.push("loss", pct(d.loss));
    }
  }
  if (d.dup > 0) args.push("duplicate", pct(d.dup));
  if (d.reorder > 0) args.push("reorder", pct(d.reorder));
  if (d.rateBps > 0) args.push("rate", `${d.rateBps}bit`);
  args.push("limit", String(d.rateBps > 0 ? d.queue : 100000));
  return args;
}

function pct(share: number): string {
  return `${+(share * 100).toFixed(6)}%`;
}

let available: Promise<string | undefined> | undefined;

/** Tries netem on `lo` in a throwaway namespace; resolves with the failure, if any. */
function probeNetem(): Promise<string | undefined> {
  available ??= (async () => {
    const ns = `sbilab-netemprobe-${Deno.pid}`;
    try {
      await run("ip", ["netns", "add", ns]);
      await run("tc", ["-n", ns, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    } finally {
      await run("ip", ["netns", "del", ns]).catch(() => {});
    }
  })();
  return available;
}

/**
 * Throws a one-line Error unless the kernel has sch_netem and `spec` uses
 * only what netem can do (it has no blackhole windows or seed).
 */
export async function requireNetem(spec: LinkSpec): Promise<void> {
  if (spec.blackhole) {
    throw new RangeError("The netem backend cannot emulate blackhole windows: use the relay");
  }
  // Loading the module is best effort; the probe decides.
  await run("modprobe", ["sch_netem"]).catch(() => {});
  const failure = await probeNetem();
  if (failure !== undefined) {
    throw new Error(
      "This kernel lacks sch_netem (tc netem failed): use the default relay backend",
      { cause: failure },
    );
  }
}
