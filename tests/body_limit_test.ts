/**
 * One body limit and one answer: a body over the configured limit gets the
 * handler's own 413 bytes on every transport, whether the handler or the
 * transport (while the body streams in) notices it first.
 */
import assert from "node:assert/strict";
import { bodyTooLarge, createHandler, overloaded } from "../handler/mod.ts";
import { createClient, createServer, type TransportName } from "../transports/mod.ts";
import { ByteBudget } from "../transports/byte_budget.ts";
import * as h2 from "../soak/h2_frames.ts";
import { echoPost, testPki, testTargets, testTransports } from "./support.ts";

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

for (const transport of OWN) {
  Deno.test(`${transport} answers every body over the limit with the handler's own 413 bytes`, async () => {
    const want = bodyTooLarge(LIMIT);
    const p = await pair(transport);
    try {
      const ok = await p.client.request(echoPost(new Uint8Array(LIMIT)));
      assert.equal(ok.status, 200);
      assert.equal(ok.body.length, LIMIT);
      for (const size of [LIMIT + 1, 64 * 1024, 4 * 1024 * 1024]) {
        const res = await p.client.request(echoPost(new Uint8Array(size)));
        assert.equal(res.status, 413, `${size} bytes`);
        assert.equal(res.headers["content-type"], "application/problem+json");
        assert.deepEqual(res.body, want.body, `${size} bytes`);
      }
      // The connection still serves after refusing bodies.
      assert.equal((await p.client.request(echoPost(new Uint8Array(10)))).status, 200);
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

for (const { stack, transport } of await testTargets()) {
  Deno.test(`${transport} refuses a body with 503 NF_CONGESTION when in-flight bodies reach the process budget (${stack} stack)`, async () => {
    const budget = new ByteBudget(32 * 1024);
    const p = await pair(transport, { stack, bodyBudget: budget, maxBodyBytes: 1024 * 1024 });
    try {
      const res = await p.client.request(echoPost(new Uint8Array(100 * 1024)));
      assert.equal(res.status, 503);
      assert.deepEqual(
        res.body,
        overloaded(`Request bodies in flight exceed ${budget.limit} bytes`).body,
      );
      assert.equal(budget.used, 0, "a refused body gives its bytes back");
      const small = await p.client.request(echoPost(new Uint8Array(1000)));
      assert.equal(small.status, 200);
      assert.equal(budget.used, 0, "a served body gives its bytes back");
      assert.ok(budget.peak <= budget.limit);
      assert.ok(budget.peak >= 1000, "the served body was counted while the handler held it");
    } finally {
      await p.close();
    }
  });
}

Deno.test("native h2c answers 503 while bodies still arrive once they pass the budget, and serves the first", async () => {
  const budget = new ByteBudget(32 * 1024);
  const pki = await testPki();
  const { createNativeH2cServer } = await import("../transports/h2/server.ts");
  const { H2_STAT } = await import("../transports/h2/server_ffi.ts");
  const server = await createNativeH2cServer(createHandler({ maxBodyBytes: 1024 * 1024 }), {
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    bodyBudget: budget,
    maxBodyBytes: 1024 * 1024,
  });
  const http = Deno.createHttpClient({ http1: false, http2: true });
  const held = Promise.withResolvers<void>();
  // A body without a length: 24 KiB now, the end only when `release` resolves.
  const upload = (release: Promise<void>) =>
    new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array(24 * 1024).fill(1));
      },
      async pull(c) {
        await release;
        c.close();
      },
    });
  const send = (body: ReadableStream<Uint8Array>) =>
    fetch(`${server.url}/nbench/v1/echo`, {
      method: "POST",
      body,
      client: http,
      headers: { "content-type": "application/octet-stream" },
      signal: AbortSignal.timeout(10_000),
    });
  try {
    const first = send(upload(held.promise));
    // Bounded: the first 24 KiB reach the module within 5 s.
    const deadline = Date.now() + 5000;
    while (server.stat(H2_STAT.BUFFERED) < 24 * 1024 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(server.stat(H2_STAT.BUFFERED), 24 * 1024);
    const never = Promise.withResolvers<void>();
    const second = await send(upload(never.promise));
    assert.equal(second.status, 503, "answered before its upload ended");
    assert.deepEqual(
      new Uint8Array(await second.arrayBuffer()),
      overloaded(`Request bodies in flight exceed ${budget.limit} bytes`).body,
    );
    never.resolve();
    held.resolve();
    const ok = await first;
    assert.equal(ok.status, 200);
    assert.equal((await ok.arrayBuffer()).byteLength, 24 * 1024);
    assert.equal(server.stat(H2_STAT.BUFFERED), 0, "every counted byte was given back");
    assert.equal(budget.used, 0);
  } finally {
    held.resolve();
    http.close();
    await server.close();
  }
});

/**
 * Sends a request head declaring `declared` body bytes on a raw HTTP/2
 * connection and none of the body; resolves with the text of the DATA the
 * server answers on that stream (empty when it closes first), bounded by 5 s.
 */
async function answerToDeclaredLength(conn: Deno.Conn, declared: number): Promise<string> {
  const block = h2.hpackLiterals([
    [":method", "POST"],
    [":scheme", "http"],
    [":authority", "x"],
    [":path", "/nbench/v1/echo"],
    ["content-type", "application/octet-stream"],
    ["content-length", String(declared)],
  ]);
  for (const f of [h2.PREFACE, h2.settingsFrame([]), h2.headersFrame(1, block, false)]) {
    let off = 0;
    while (off < f.length) off += await conn.write(f.subarray(off));
  }
  const timer = setTimeout(() => conn.close(), 5000);
  let pending = new Uint8Array(0);
  const got: number[] = [];
  const buf = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      const joined = new Uint8Array(pending.length + n);
      joined.set(pending);
      joined.set(buf.subarray(0, n), pending.length);
      let off = 0;
      let ended = false;
      while (joined.length - off >= 9) {
        const len = (joined[off] << 16) | (joined[off + 1] << 8) | joined[off + 2];
        if (joined.length - off < 9 + len) break;
        const type = joined[off + 3];
        const flags = joined[off + 4];
        const id = new DataView(joined.buffer, off + 5, 4).getUint32(0) & 0x7fffffff;
        if (id === 1 && type === 0) {
          got.push(...joined.subarray(off + 9, off + 9 + len));
          if (flags & 1) ended = true;
        }
        if (id === 1 && type === 3) ended = true; // RST_STREAM
        off += 9 + len;
      }
      pending = joined.slice(off);
      if (ended) break;
    }
  } catch {
    // closed by the timer, or reset
  } finally {
    clearTimeout(timer);
  }
  return new TextDecoder().decode(new Uint8Array(got));
}

for (const { stack, transport } of await testTargets()) {
  if (transport === "h3") continue;
  Deno.test(`${transport} answers a declared content-length over the limit with 413 before any body byte is sent (${stack} stack)`, async () => {
    const pki = await testPki();
    const server = await createServer(transport, createHandler({ maxBodyBytes: LIMIT }), {
      stack,
      tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
      maxBodyBytes: LIMIT,
    });
    const port = Number(new URL(server.url).port);
    const conn = transport === "h2c"
      ? await Deno.connect({ hostname: "127.0.0.1", port })
      : await Deno.connectTls({
        hostname: "127.0.0.1",
        port,
        caCerts: [pki.caCertPem],
        alpnProtocols: ["h2"],
      });
    try {
      const text = await answerToDeclaredLength(conn, 100 * 1024 * 1024);
      assert.equal(text, new TextDecoder().decode(bodyTooLarge(LIMIT).body));
    } finally {
      try {
        conn.close();
      } catch { /* closed already */ }
      await server.close();
    }
  });
}
