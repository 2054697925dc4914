/**
 * One body limit and one answer: a body over the configured limit gets the
 * handler's own 413 bytes on every transport, whether the handler or the
 * transport (while the body streams in) notices it first.
 */
import assert from "node:assert/strict";
import { bodyTooLarge, createHandler } from "../handler/mod.ts";
import { createClient, createServer, type TransportName } from "../transports/mod.ts";
import { ByteBudget } from "../transports/byte_budget.ts";
import { testPki, testTransports } from "./support.ts";

const LIMIT = 4096;
const OWN: TransportName[] = await testTransports();

async function pair(transport: TransportName, extra: Record<string, unknown> = {}) {
  const pki = await testPki();
  const handler = createHandler({ maxBodyBytes: LIMIT });
  const server = await createServer(transport, handler, {
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    maxBodyBytes: LIMIT,
    ...extra,
  });
  const client = await createClient(transport, server.url, {
    tls: { ca: pki.caCertPem },
    timeoutMs: 10_000,
  });
  return {
    client,
    url: server.url,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

function post(body: Uint8Array) {
  return {
    method: "POST",
    path: "/nbench/v1/echo",
    headers: { "content-type": "application/octet-stream" },
    body,
  };
}

for (const transport of OWN) {
  Deno.test(`${transport} answers every body over the limit with the handler's own 413 bytes`, async () => {
    const want = bodyTooLarge(LIMIT);
    const p = await pair(transport);
    try {
      const ok = await p.client.request(post(new Uint8Array(LIMIT)));
      assert.equal(ok.status, 200);
      assert.equal(ok.body.length, LIMIT);
      for (const size of [LIMIT + 1, 64 * 1024, 4 * 1024 * 1024]) {
        const res = await p.client.request(post(new Uint8Array(size)));
        assert.equal(res.status, 413, `${size} bytes`);
        assert.equal(res.headers["content-type"], "application/problem+json");
        assert.deepEqual(res.body, want.body, `${size} bytes`);
      }
      // The connection still serves after refusing bodies.
      assert.equal((await p.client.request(post(new Uint8Array(10)))).status, 200);
    } finally {
      await p.close();
    }
  });
}

Deno.test("h2c refuses a body sent without a length with the same 413 as it streams in", async () => {
  const p = await pair("h2c");
  const http = Deno.createHttpClient({ http1: false, http2: true });
  try {
    let sent = 0;
    const chunk = new Uint8Array(64 * 1024);
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        // Bounded: 4 MiB at most, far past the limit.
        if (sent >= 4 * 1024 * 1024) return c.close();
        sent += chunk.length;
        c.enqueue(chunk);
      },
    });
    const res = await fetch(`${p.url}/nbench/v1/echo`, {
      method: "POST",
      body,
      client: http,
      headers: { "content-type": "application/octet-stream" },
    });
    assert.equal(res.status, 413);
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bodyTooLarge(LIMIT).body);
    assert.ok(sent < 4 * 1024 * 1024, `the server answered before the whole body (${sent} sent)`);
  } finally {
    http.close();
    await p.close();
  }
});

Deno.test("h2c refuses a body with 503 NF_CONGESTION when in-flight bodies reach the process budget", async () => {
  const budget = new ByteBudget(32 * 1024);
  const p = await pair("h2c", { bodyBudget: budget, maxBodyBytes: 1024 * 1024 });
  try {
    const res = await p.client.request(post(new Uint8Array(100 * 1024)));
    assert.equal(res.status, 503);
    assert.equal(JSON.parse(new TextDecoder().decode(res.body)).cause, "NF_CONGESTION");
    assert.equal(budget.used, 0, "a refused body gives its bytes back");
    const small = await p.client.request(post(new Uint8Array(1000)));
    assert.equal(small.status, 200);
    assert.equal(budget.used, 0, "a served body gives its bytes back");
    assert.ok(budget.peak <= budget.limit);
  } finally {
    await p.close();
  }
});
