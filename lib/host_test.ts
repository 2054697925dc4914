import assert from "node:assert/strict";
import { pathExists, ROOT } from "./host.ts";

Deno.test("pathExists finds files and folders and answers false for a missing path", async () => {
  assert.equal(await pathExists(`${ROOT}/deno.json`), true);
  assert.equal(await pathExists(`${ROOT}/transports`), true);
  assert.equal(await pathExists(`${ROOT}/no-such-file-${crypto.randomUUID()}`), false);
});
