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
  const m = await runLab(["profile", "--memory", "--callgrind"]);
  assert.equal(m.code, 2);
  assert.match(m.stderr, /--memory and --callgrind are separate runs/);
  const j = await runLab(["profile", "--json", "x.json"]);
  assert.equal(j.code, 2);
  assert.match(j.stderr, /--json goes with --memory/);
});

Deno.test({
  name: "lab profile prints a table per side with the time per request of each category",
  ignore: H2_NATIVE_SKIP !== null,
  fn: async () => {
    const r = await runLab(["profile", "--requests", "300", "--warm-up", "50"], 120_000);
    const text = new TextDecoder().decode(r.stdout);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      text,
      /^lab profile: h2c, sbilab client → sbilab, 256 B, 1 in flight, 300 requests/m,
    );
    assert.match(text, /^wall time per request: [\d.]+ (µs|ms)/m);
    assert.match(text, /^client \(sbilab SBI client\): 300 requests/m);
    assert.match(text, /^server \(sbilab\): 300 requests/m);
    assert.match(text, /^busy on the main thread \(profile\)\s+[\d.]+\s+100 %$/m);
    assert.match(text, /^FFI calls\s+[\d.]+\s+[\d.]+ %$/m);
  },
});

Deno.test({
  name: "lab profile --memory prints and saves the RSS growth of the client and server processes",
  ignore: H2_NATIVE_SKIP !== null,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "sbilab-profile-memory-" });
    try {
      const json = `${dir}/memory.json`;
      const r = await runLab(
        ["profile", "--memory", "--requests", "300", "--warm-up", "50", "--json", json],
        120_000,
      );
      const text = new TextDecoder().decode(r.stdout);
      assert.equal(r.code, 0, r.stderr);
      assert.match(text, /^memory of one warm connection: h2c on the native stack, /m);
      assert.match(text, /^client \(sbilab SBI client\)\s+\d+ deno\s+[\d.]+ MiB/m);
      assert.match(text, /^server \(sbilab\)\s+\d+ deno\s+[\d.]+ MiB/m);
      assert.match(text, /^0–300\s+[-+±][\d.]+ [KM]?i?B\s+[-+±][\d.]+ [KM]?i?B$/m);
      assert.match(text, /^target: RSS growth over 300 requests under 5 MiB per side: client /m);
      const record = JSON.parse(await Deno.readTextFile(json));
      assert.equal(record.schema, "sbilab-memory/1");
      assert.equal(record.errors, 0);
      const [client, server] = record.sides;
      assert.equal(record.sides.length, 2);
      // each side is a deno process of its own, read after the warm-up and at the end
      assert.notEqual(client.pid, server.pid);
      for (const side of record.sides) {
        assert.equal(side.process, "deno");
        assert.deepEqual(side.samples.map((x: { requests: number }) => x.requests), [0, 300]);
        assert.equal(side.growthBytes, side.endBytes - side.afterWarmupBytes);
        assert.ok(side.peakBytes >= side.endBytes);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
