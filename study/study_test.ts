import assert from "node:assert/strict";
import { parseBudget, planRows } from "./study.ts";

const LINKS = [
  { rttMs: 0, loopback: false },
  { rttMs: 5, loopback: false },
  { rttMs: 50, loopback: false },
  { rttMs: 50, loopback: false },
];
const BASE = {
  links: LINKS,
  transports: 3,
  ues: [16, 64],
  streams: ["journey", "warm-get"],
  warmupMs: 1000,
  minMs: 1000,
  maxMs: 60_000,
};

Deno.test("planRows asks for as many flows per row as the budget allows, and fits it", () => {
  const big = planRows({ ...BASE, remainingMs: 30 * 60_000 });
  const ten = planRows({ ...BASE, remainingMs: 10 * 60_000 });
  const five = planRows({ ...BASE, remainingMs: 5 * 60_000 });
  assert.ok(
    big.samples > ten.samples && ten.samples > five.samples,
    JSON.stringify([big, ten, five]),
  );
  for (const [plan, budget] of [[big, 30], [ten, 10], [five, 5]] as const) {
    assert.ok(plan.estimateMs <= budget * 60_000, `${plan.estimateMs} > ${budget} min`);
  }
  assert.equal(planRows({ ...BASE, remainingMs: 30 * 60_000, maxSamples: 100 }).samples, 100);
});

Deno.test("planRows shares out what is left when even the fewest flows do not fit", () => {
  const plan = planRows({ ...BASE, remainingMs: 60_000 });
  assert.equal(plan.samples, 30);
  assert.equal(plan.sampleMs, 1000);
  assert.ok(plan.estimateMs > 60_000);
});

Deno.test("parseBudget reads minutes, seconds and hours and refuses less than 10 s", () => {
  assert.equal(parseBudget("10m"), 600_000);
  assert.equal(parseBudget("90s"), 90_000);
  assert.equal(parseBudget("90"), 90_000);
  assert.equal(parseBudget("1h"), 3_600_000);
  for (const bad of ["5s", "ten", "-1m", ""]) assert.throws(() => parseBudget(bad), RangeError);
});

Deno.test("planRows charges each round's draining flows, so more rounds plan fewer flows or more time", () => {
  const one = planRows({ ...BASE, remainingMs: 10 * 60_000 });
  const eight = planRows({ ...BASE, remainingMs: 10 * 60_000, rounds: 8 });
  assert.ok(
    eight.samples < one.samples ||
      (eight.samples === one.samples && eight.estimateMs > one.estimateMs),
    JSON.stringify([one, eight]),
  );
  assert.ok(eight.estimateMs <= 0.9 * 10 * 60_000 || eight.samples === 30);
});
