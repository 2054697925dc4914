import assert from "node:assert/strict";
import { linkNeedMs, planLink } from "./link_plan.ts";

const LINKS = [
  { rttMs: 50, loopback: false },
  { rttMs: 50, loopback: false },
  { rttMs: 5, loopback: false },
  { rttMs: 0, loopback: false },
];
const BASE = {
  transports: 3,
  ues: [64, 256],
  streams: ["journey", "warm-get"],
  warmupMs: 1000,
  maxFlows: 2400,
  looks: 4,
  firstLook: 600,
  minCellMs: 5000,
};

Deno.test("a link with a longer RTT needs more time for the same flows", () => {
  const wan = linkNeedMs(LINKS[0], BASE), lan = linkNeedMs(LINKS[3], BASE);
  assert.ok(wan > lan, `${wan} vs ${lan}`);
  assert.ok(linkNeedMs(LINKS[0], { ...BASE, maxFlows: 600 }) < wan);
});

Deno.test("planLink gives a link what it needs when the budget allows, and keeps the later links' first look", () => {
  const need = linkNeedMs(LINKS[0], BASE);
  // Room for everything: each cell's last look, a warm GET's too (twice its planned flows).
  const roomy = planLink(60 * 60_000, LINKS, BASE);
  const full = linkNeedMs(LINKS[0], { ...BASE, scale: "look" });
  assert.ok(full > need);
  assert.equal(roomy.linkMs, full);
  const first = (l: typeof LINKS[number]) =>
    linkNeedMs(l, { ...BASE, maxFlows: 600, looks: 1, scale: "look" });
  const others = first(LINKS[2]) + first(LINKS[3]);
  const own = first(LINKS[0]);
  // Tight: the two 50 ms links share what the others' first looks leave, by need (halves here).
  const tight = planLink((need + others) / 0.95, LINKS, BASE);
  assert.ok(Math.abs(tight.linkMs - need / 2) < 1e-6, JSON.stringify(tight));
  // The second of them then has the rest: all it needs.
  const second = planLink((need / 2 + others) / 0.95, LINKS.slice(1), BASE);
  assert.ok(Math.abs(second.linkMs - need / 2) < 1e-6, JSON.stringify(second));
  // Never less than its own first look.
  const tighter = planLink((others + own) / 0.95, LINKS, BASE);
  assert.ok(Math.abs(tighter.linkMs - own) < 1e-6, JSON.stringify(tighter));
  // A link with no peer takes what is left after the later links' first looks.
  const metro = linkNeedMs(LINKS[2], BASE);
  const alone = planLink((metro / 2 + first(LINKS[3])) / 0.95, LINKS.slice(2), BASE);
  assert.ok(
    Math.abs(alone.linkMs - Math.max(first(LINKS[2]), metro / 2)) < 1e-6,
    JSON.stringify(alone),
  );
  // The last link takes whatever is left, up to its need.
  const last = planLink(30_000, LINKS.slice(3), BASE);
  assert.equal(last.linkMs, 0.95 * 30_000);
  assert.equal(last.cellMs, BASE.minCellMs);
});

Deno.test("a warm-GET cell is planned to half its last look and needs its look factor's flows to reach a look", () => {
  const journey = linkNeedMs(LINKS[0], { ...BASE, streams: ["journey"], ues: [64] });
  const at = (maxFlows: number, scale?: "plan" | "look") =>
    linkNeedMs(LINKS[0], { ...BASE, streams: ["warm-get"], ues: [64], maxFlows, scale });
  const fixed = linkNeedMs(LINKS[0], { ...BASE, streams: [], ues: [64] });
  // Beyond the link's fixed costs: warm-ups, drains, and the arrivals, in proportion to flows.
  const arrivals = (ms: number) => ms - fixed - BASE.transports * BASE.warmupMs;
  assert.ok(journey > at(2400), `${journey} vs ${at(2400)}`);
  // Planned: 4 × 2,400 warm GETs against 4 × 600.
  assert.ok(Math.abs(arrivals(at(2400)) / arrivals(at(600)) - 4) < 0.3);
  // Its looks are at 8 × the journey's: reaching one takes twice the planned flows' time.
  assert.ok(Math.abs(arrivals(at(2400, "look")) / arrivals(at(2400)) - 2) < 0.1);
  // A journey cell scales the same either way.
  const j = (scale: "plan" | "look") =>
    linkNeedMs(LINKS[0], { ...BASE, streams: ["journey"], ues: [64], scale });
  assert.equal(j("plan"), j("look"));
});
