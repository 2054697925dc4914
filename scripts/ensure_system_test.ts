import assert from "node:assert/strict";
import { installPlan, missingPackages, systemPackages } from "./ensure_system.ts";
import { needsTool } from "../tests/support.ts";

Deno.test("the package list names the build tools, the peers and the browser the tests need", async () => {
  const list = await systemPackages();
  for (const p of ["gcc", "libngtcp2-dev", "libnghttp2-dev", "gnutls-bin", "chromium"]) {
    assert.ok(list.includes(p), p);
  }
  assert.ok(list.every((p) => /^[a-z0-9][a-z0-9+.-]+$/.test(p)), list.join(" "));
});

Deno.test({
  name: "missingPackages tells installed packages from missing ones through dpkg",
  ignore: needsTool("dpkg-query", "dpkg"),
  fn: async () => {
    assert.deepEqual(await missingPackages(["bash", "sbilab-no-such-package"]), [
      "sbilab-no-such-package",
    ]);
  },
});

Deno.test("root installs what is missing; anyone else gets the one apt-get line to run", () => {
  assert.equal(installPlan([], 1000), undefined);
  assert.equal(installPlan([], 0), undefined);
  assert.deepEqual(installPlan(["gcc", "curl"], 0), { install: ["gcc", "curl"] });
  assert.deepEqual(installPlan(["gcc", "curl"], 1000), {
    error: "missing system packages; run: sudo apt-get install -y --no-install-recommends gcc curl",
  });
});
