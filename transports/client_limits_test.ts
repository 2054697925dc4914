import assert from "node:assert/strict";
import {
  clientLimitRows,
  clientLimitsTable,
  DEFAULT_CLIENT_LIMITS,
  resolveClientLimits,
} from "./client_limits.ts";
import { DEFAULT_SERVER_LIMITS } from "./server_limits.ts";

Deno.test("client limits take the documented defaults and the caller's values", () => {
  assert.deepEqual(resolveClientLimits(), { ...DEFAULT_CLIENT_LIMITS });
  assert.equal(DEFAULT_CLIENT_LIMITS.handshakeTimeoutMs, 10_000);
  assert.equal(DEFAULT_CLIENT_LIMITS.maxBodyBytes, 64 * 1024 * 1024);
  // one header-section bound for both ends of a connection
  assert.equal(
    DEFAULT_CLIENT_LIMITS.maxHeaderSectionBytes,
    DEFAULT_SERVER_LIMITS.maxHeaderSectionBytes,
  );
  assert.equal(resolveClientLimits({ maxBodyBytes: 1000 }).maxBodyBytes, 1000);
});

Deno.test("client limits refuse zero, negative and fractional values", () => {
  assert.throws(
    () => resolveClientLimits({ handshakeTimeoutMs: 0 }),
    /Invalid handshakeTimeoutMs: 0/,
  );
  assert.throws(() => resolveClientLimits({ maxBodyBytes: -1 }), RangeError);
  assert.throws(() => resolveClientLimits({ maxHeaderSectionBytes: 1.5 }), RangeError);
});

Deno.test("docs/limits.md's client table is the one clientLimitRows gives", async () => {
  const doc = await Deno.readTextFile(new URL("../docs/limits.md", import.meta.url));
  const cells = (line: string) => line.split("|").slice(1, -1).map((c) => c.trim());
  const table = (text: string) =>
    text.split("\n").filter((l) =>
      l.startsWith("| `") && /`(handshakeTimeoutMs|maxBodyBytes|maxHeaderSectionBytes)`/.test(l)
    )
      .map(cells);
  const want = table(clientLimitsTable());
  assert.equal(want.length, clientLimitRows(resolveClientLimits()).length);
  assert.deepEqual(table(doc), want);
});
