import assert from "node:assert/strict";
import { runLab } from "./support.ts";
import { H2_NATIVE_SKIP } from "../transports/h2/_test_util.ts";

Deno.test("lab profile refuses a peer that does not speak the transport", async () => {
  const r = await runLab(["profile", "--transport", "h3", "--server", "nghttpd"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--server nghttpd goes with --transport h2c/);
  const n = await runLab(["profile", "--requests", "0"]);
  assert.equal(n.code, 2);
  assert.match(n.stderr, /--requests must be a whole number 1-1000000/);
});

Deno.test({
  name: "lab profile prints a table per side with the time per request of each category",
  ignore: H2_NATIVE_SKIP !== null,
  fn: async () => {
    const r = await runLab(["profile", "--requests", "300", "--warmup", "50"], 120_000);
    const text = new TextDecoder().decode(r.stdout);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      text,
      /^lab profile: h2c, sbilab client → sbilab, 256 B, 1 in flight, 300 requests/m,
    );
    assert.match(text, /^wall time per request: [\d.]+ µs/m);
    assert.match(text, /^client \(sbilab SBI client\): 300 requests/m);
    assert.match(text, /^server \(sbilab\): 300 requests/m);
    assert.match(text, /^busy on the main thread \(profile\)\s+[\d.]+\s+100 %$/m);
    assert.match(text, /^FFI calls\s+[\d.]+\s+[\d.]+ %$/m);
  },
});
