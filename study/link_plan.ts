/**
 * How `lab study` shares its budget between links: the time a link needs to
 * take each of its cells to its planned flows (its last look; a warm GET's
 * half of it), and the plan for the next link that keeps every later link
 * its first look.
 */
import { defaultArrivalRate, PER_REQUEST_MS, requestsPerUe } from "./flows_scenario.ts";
import { JOURNEY, WARM_GET } from "./flows/definitions.ts";
import { streamLookFactor, streamPlanFactor } from "./sequential.ts";

/** Fixed costs of one link (ms): opening it, starting the server, one child per transport. */
export function linkOverheadMs(transports: number, loopback: boolean): number {
  return (loopback ? 3000 : 6000) + transports * 4000;
}

/** What the study asks of one link. */
export interface LinkPlan {
  /** Average time per cell (UE level × stream) the link's run may spend (ms); decided cells leave theirs to the next. */
  cellMs: number;
  /** Time given to this link, its fixed costs included (ms). */
  linkMs: number;
  /** Time every link still to run needs to take each cell to its planned flows (ms). */
  needMs: number;
}

/** Inputs of {@link linkNeedMs} and {@link planLink}. */
export interface LinkPlanInput {
  /** Transports (rows) per cell. */
  transports: number;
  ues: number[];
  streams: string[];
  warmupMs: number;
  /** Most flows per side a cell takes (the design's last look). */
  maxFlows: number;
  /** Looks per cell: each waits for the flows in flight. Default 1. */
  looks?: number;
  /**
   * How a stream's flows scale `maxFlows`: `plan` (default) by its plan factor
   * (a warm GET is planned to half its last look), `look` by its look factor
   * (the time to a look every cell of the stream takes, such as its first).
   */
  scale?: "plan" | "look";
}

/**
 * Time one link needs to take each of its cells to its planned flows (ms):
 * its fixed costs, and per cell each transport's warm-up, its arrivals at the
 * default rate, and a drain of about two flows per look.
 */
export function linkNeedMs(link: { rttMs: number; loopback: boolean }, p: LinkPlanInput): number {
  let ms = linkOverheadMs(p.transports, link.loopback);
  for (const stream of p.streams) {
    const requests = requestsPerUe(stream === "journey" ? JOURNEY : [WARM_GET]);
    const flowMs = requests * (link.rttMs + PER_REQUEST_MS);
    for (const ues of p.ues) {
      const rate = defaultArrivalRate(ues, requests, link.rttMs);
      const factor = p.scale === "look" ? streamLookFactor(stream) : streamPlanFactor(stream);
      const flows = p.maxFlows * factor;
      ms += p.transports * (p.warmupMs + (flows / rate) * 1000) +
        (p.looks ?? 1) * 2 * flowMs;
    }
  }
  return ms;
}

/**
 * Plans the next link: it may take what it needs to take each cell to its
 * last look (a warm GET's too, where the budget has room for it), as long as
 * every link after it keeps enough to reach its first look, and it shares
 * with the links of the same RTT still to run (the answer's `wan` and
 * `lossy`) in proportion to their planned needs, so that the first of them
 * cannot starve the next; time a link does not use (its cells decided early)
 * goes to the links after it. Cells never get less than `minCellMs`.
 */
export function planLink(
  remainingMs: number,
  links: { rttMs: number; loopback: boolean }[],
  p: LinkPlanInput & { minCellMs: number; firstLook: number },
): LinkPlan {
  const needs = links.map((l) => linkNeedMs(l, p));
  const firsts = links.map((l) =>
    linkNeedMs(l, { ...p, maxFlows: p.firstLook, looks: 1, scale: "look" })
  );
  const peers = links.map((l) => l.rttMs === links[0].rttMs && l.loopback === links[0].loopback);
  // Links of another RTT keep their first look; peers share what is left by need.
  const reserve = firsts.slice(1).reduce((a, b, i) => a + (peers[i + 1] ? 0 : b), 0);
  const peerNeed = needs.reduce((a, b, i) => a + (peers[i] ? b : 0), 0);
  // A twentieth of what is left stays spare for what the estimate misses (a busy box).
  const spare = 0.95 * remainingMs;
  const share = (spare - reserve) * (needs[0] / peerNeed);
  const full = linkNeedMs(links[0], { ...p, scale: "look" });
  const linkMs = Math.min(full, Math.max(firsts[0], share), spare);
  const cells = p.ues.length * p.streams.length;
  const fixed = linkOverheadMs(p.transports, links[0].loopback);
  return {
    cellMs: Math.max(p.minCellMs, (linkMs - fixed) / cells),
    linkMs,
    needMs: needs.reduce((a, b) => a + b, 0),
  };
}
