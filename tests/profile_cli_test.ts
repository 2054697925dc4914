import assert from "node:assert/strict";
import { needsTool, runLab } from "./support.ts";
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
  assert.match(j.stderr, /--json goes with --memory or --callgrind/);
  const c = await runLab(["profile", "--client", "h2load"]);
  assert.equal(c.code, 2);
  assert.match(c.stderr, /--client h2load goes with --callgrind/);
  const h = await runLab(["profile", "--callgrind", "--transport", "h3", "--client", "h2load"]);
  assert.equal(h.code, 2);
  assert.match(h.stderr, /--client h2load goes with --transport h2c or h2-tls/);
  const l = await runLab(["profile", "--transport", "h2c,h3"]);
  assert.equal(l.code, 2);
  assert.match(l.stderr, /--transport takes a list only with --callgrind/);
  const p = await runLab([
    "profile",
    "--callgrind",
    "--transport",
    "h2c,h3",
    "--server",
    "nghttpd",
  ]);
  assert.equal(p.code, 2);
  assert.match(p.stderr, /--transport takes a list only with --callgrind, sbilab's server/);
  const rp = await runLab(["profile", "--repeat", "3"]);
  assert.equal(rp.code, 2);
  assert.match(rp.stderr, /--repeat goes with --callgrind/);
});

Deno.test({
  name: "lab profile --callgrind counts both sides' instructions per request by object and part",
  ignore: needsTool("valgrind", "valgrind") || needsTool("h2load", "nghttp2-client"),
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "sbilab-profile-callgrind-" });
    try {
      const json = `${dir}/callgrind.json`;
      // both sides C (sbilab's h2 module in its C host, h2load): seconds under callgrind, not minutes
      const r = await runLab([
        "profile",
        "--callgrind",
        "--server",
        "c-host",
        "--client",
        "h2load",
        "--requests",
        "80",
        "--json",
        json,
      ], 120_000);
      const text = new TextDecoder().decode(r.stdout);
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        text,
        /^lab profile --callgrind: h2c, h2load client → c-host, 256 B, 1 in flight, 80 − 20 requests/m,
      );
      assert.match(
        text,
        /^client \(h2load\) under callgrind \(80 − 20 requests\): [\d,]+ instructions per request$/m,
      );
      assert.match(text, /^server \(c-host\) under callgrind/m);
      assert.match(text, /^libnghttp2\.so[\d.]*\s+[\d,]+\s+[\d.]+ %$/m);
      const [record] = JSON.parse(await Deno.readTextFile(json));
      assert.equal(record.schema, "sbilab-callgrind/1");
      assert.deepEqual(record.requests, [20, 80]);
      const [client, server] = record.sides;
      assert.deepEqual([client.side, client.name, server.side, server.name], [
        "client",
        "h2load",
        "server",
        "c-host",
      ]);
      for (const side of record.sides) {
        // two C processes: no Deno binary, no generated code worth a row; the C part dominates
        assert.equal(side.parts.runtime, 0);
        assert.ok(side.parts.native > 0.7 * side.parts.total, JSON.stringify(side.parts));
        // a warm h2c request costs thousands of instructions, not millions (start-up cancelled)
        assert.ok(
          side.parts.total > 2_000 && side.parts.total < 200_000,
          JSON.stringify(side.parts),
        );
      }
      assert.ok(server.perObject["sbilab_h2host"] > 0, "the module runs inside sbilab_h2host");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "lab profile prints a table per side with the time per request of each category",
  ignore: H2_NATIVE_SKIP !== null,
  fn: async () => {
    const r = await runLab(["profile", "--requests", "3000", "--warm-up", "50"], 120_000);
    const text = new TextDecoder().decode(r.stdout);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      text,
      /^lab profile: h2c, sbilab client → sbilab, 256 B, 1 in flight, 3000 requests/m,
    );
    assert.match(text, /^wall time per request: [\d.]+ (µs|ms)/m);
    assert.match(text, /^client \(sbilab SBI client\): 3000 requests/m);
    assert.match(text, /^server \(sbilab\): 3000 requests/m);
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

Deno.test({
  name:
    "lab profile --callgrind reads the SBI client's and its server's counters between two batches",
  ignore: needsTool("valgrind", "valgrind") || H2_NATIVE_SKIP !== null,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "sbilab-profile-callgrind-" });
    try {
      const json = `${dir}/callgrind.json`;
      const r = await runLab([
        "profile",
        "--callgrind",
        "--server",
        "c-host",
        "--requests",
        "40",
        "--warm-up",
        "20",
        "--json",
        json,
        "--out",
        `${dir}/files`,
      ], 600_000);
      assert.equal(r.code, 0, r.stderr);
      const [record] = JSON.parse(await Deno.readTextFile(json));
      assert.deepEqual(record.requests, [10, 40]);
      assert.equal(record.warmup, 20);
      const [client, server] = record.sides;
      // one process each, counters zeroed after the warm-up and dumped after each batch
      for (const side of ["client", "server"]) {
        const files = [...Deno.readDirSync(`${dir}/files`)].map((e) => e.name);
        const file = side === "client" ? "client-h2c-1.callgrind" : "server.callgrind";
        assert.ok(files.includes(`${file}.1`) && files.includes(`${file}.2`), files.join(" "));
      }
      // the SBI client is Deno: its binary and its generated code are counted (after so short a
      // warm-up V8 still compiles in the first batch, so their difference may be any sign), and
      // the module and nghttp2 run for every request
      assert.ok("deno" in client.perObject && "???" in client.perObject);
      assert.ok(client.perObject["libsbilab_h2.so"] > 0, JSON.stringify(client.perObject));
      assert.ok(
        Object.entries(client.perObject as Record<string, number>).some(([o, n]) =>
          o.startsWith("libnghttp2") && n > 0
        ),
      );
      assert.equal(server.parts.runtime, 0);
      assert.ok(server.parts.native > 0.5 * server.parts.total, JSON.stringify(server.parts));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
