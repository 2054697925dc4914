/**
 * Responses are reserved before they are built: on every transport and stack,
 * an answer that finds no room in the response budget resets its stream
 * (the client sees a stream error, not an answer; `Deno.serve`, which cannot
 * reset one stream, answers 503 NF_CONGESTION instead), nothing stays
 * reserved, and the same connection keeps being served.
 */
import assert from "node:assert/strict";
import { createHandler, overloaded } from "../handler/mod.ts";
import { createClient, createServer } from "../transports/mod.ts";
import { ByteBudget } from "../transports/byte_budget.ts";
import { testPki, testTargets } from "./support.ts";

for (const { stack, transport } of await testTargets()) {
  Deno.test(`${transport} refuses an answer the response budget has no room for before building it, and serves on (${stack} stack)`, async () => {
    const pki = await testPki();
    // 1 MiB: a connection may reserve 256 KiB of it, a large answer 7/8 of it (the deno
    // stack's h2 knows no connections).
    const budget = new ByteBudget(1024 * 1024);
    const server = await createServer(transport, createHandler(), {
      stack,
      tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
      responseBudget: budget,
    });
    const client = await createClient(transport, server.url, {
      tls: { ca: pki.caCertPem },
      timeoutMs: 5000,
    });
    try {
      const get = (size: number) =>
        client.request({ method: "GET", path: `/nbench/v1/payload?size=${size}` });
      assert.equal((await get(200 * 1024)).body.length, 200 * 1024);
      if (stack === "deno" && transport !== "h3") {
        const res = await get(960 * 1024);
        assert.equal(res.status, 503);
        const want = overloaded("No room for the response in the server's response budget");
        assert.deepEqual(res.body, want.body);
      } else {
        await assert.rejects(get(960 * 1024), (err: Error) => {
          assert.doesNotMatch(err.message, /timed out/i, err.message);
          return true;
        });
      }
      assert.equal((await get(1000)).status, 200);
      assert.equal((await get(200 * 1024)).body.length, 200 * 1024);
      assert.equal(budget.used, 0, "every reservation came back");
      assert.ok(budget.peak <= 256 * 1024, `peak ${budget.peak}`);
    } finally {
      await client.close();
      await server.close();
    }
  });
}
