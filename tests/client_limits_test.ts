/**
 * One set of client limits on every client of every stack (ClientLimits): a
 * response body over `maxBodyBytes` fails its request with TransportError and
 * the client goes on serving the next request.
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import { createClient, createServer, TransportError } from "../transports/mod.ts";
import { testPki, testTargets } from "./support.ts";

const get = (size: number) => ({
  method: "GET",
  path: `/nbench/v1/payload?size=${size}`,
  headers: {},
});

for (const { stack, transport } of await testTargets()) {
  Deno.test(`${stack} ${transport} client refuses a response body over its maxBodyBytes and serves the next request`, async () => {
    const pki = await testPki();
    const server = await createServer(transport, createHandler(), {
      tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
      stack,
    });
    const client = await createClient(transport, server.url, {
      stack,
      tls: { ca: pki.caCertPem },
      maxBodyBytes: 4096,
      timeoutMs: 5000,
    });
    try {
      assert.equal((await client.request(get(4096))).body.length, 4096);
      await assert.rejects(client.request(get(64 * 1024)), TransportError);
      assert.equal((await client.request(get(100))).body.length, 100);
    } finally {
      await client.close();
      await server.close();
    }
  });
}
