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
  const roomy = planLink(60 * 60_000, LINKS, BASE);
  assert.equal(roomy.linkMs, need);
  const firsts = LINKS.slice(1).reduce(
    (ms, l) => ms + linkNeedMs(l, { ...BASE, maxFlows: 600, looks: 1 }),
    0,
  );
  const own = linkNeedMs(LINKS[0], { ...BASE, maxFlows: 600, looks: 1 });
  // What is left after the later links' first looks, but never less than its own first look.
  const tight = planLink(need / 0.95, LINKS, BASE);
  assert.ok(Math.abs(tight.linkMs - Math.max(own, need - firsts)) < 1e-6, JSON.stringify(tight));
  const tighter = planLink((firsts + 2 * own) / 0.95, LINKS, BASE);
  assert.ok(Math.abs(tighter.linkMs - 2 * own) < 1e-6, JSON.stringify(tighter));
  // The last link takes whatever is left, up to its need.
  const last = planLink(30_000, LINKS.slice(3), BASE);
  assert.equal(last.linkMs, 0.95 * 30_000);
  assert.equal(last.cellMs, BASE.minCellMs);
});
