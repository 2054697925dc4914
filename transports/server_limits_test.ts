import assert from "node:assert/strict";
import { DEFAULT_SERVER_LIMITS, resolveServerLimits, serverLimitRows } from "./server_limits.ts";
import { ByteBudget } from "./byte_budget.ts";
import { DEFAULT_MAX_BODY_BYTES } from "../handler/handler.ts";

Deno.test("server limits without options are the stated defaults", () => {
  const l = resolveServerLimits();
  assert.deepEqual(l, { ...DEFAULT_SERVER_LIMITS });
  assert.equal(l.maxBodyBytes, DEFAULT_MAX_BODY_BYTES);
  assert.equal(l.idleTimeoutMs, 60_000);
  assert.equal(l.handshakeTimeoutMs, 10_000);
  assert.equal(l.stallTimeoutMs, 30_000);
  assert.equal(l.ticketLifetimeSeconds, 3600);
  assert.equal(l.maxQueuedResponseBytes, 64 * 1024 * 1024);
  assert.equal(l.maxInflightBodyBytes, 256 * 1024 * 1024);
});

Deno.test("server limits take each option given, the budgets' ceilings included, and keep the defaults for the rest", () => {
  const l = resolveServerLimits({
    idleTimeoutMs: 500,
    ticketLifetimeSeconds: 0,
    bodyBudget: new ByteBudget(1000),
    responseBudget: new ByteBudget(2000),
  });
  assert.equal(l.idleTimeoutMs, 500);
  assert.equal(l.ticketLifetimeSeconds, 0);
  assert.equal(l.maxInflightBodyBytes, 1000);
  assert.equal(l.maxQueuedResponseBytes, 2000);
  assert.equal(l.stallTimeoutMs, DEFAULT_SERVER_LIMITS.stallTimeoutMs);
});

Deno.test("server limits refuse zero, negative and fractional values where a positive integer is due", () => {
  assert.throws(() => resolveServerLimits({ idleTimeoutMs: 0 }), /Invalid idleTimeoutMs: 0/);
  assert.throws(() => resolveServerLimits({ maxConnections: -1 }), RangeError);
  assert.throws(() => resolveServerLimits({ stallTimeoutMs: 1.5 }), RangeError);
  assert.throws(() => resolveServerLimits({ ticketLifetimeSeconds: -1 }), RangeError);
});

Deno.test("server limit rows name the lab serve option of each limit with the value in force", () => {
  const rows = serverLimitRows(resolveServerLimits({ stallTimeoutMs: 1234 }));
  assert.deepEqual(rows.map((r) => r.option), [
    "--max-body",
    "--max-connections",
    "--handshake-timeout",
    "--idle-timeout",
    "--stall-timeout",
    "--ticket-lifetime",
    "--max-inflight-bodies",
    "--max-queued-responses",
  ]);
  assert.equal(rows.find((r) => r.name === "stallTimeoutMs")?.value, 1234);
});
