import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import type { SbiHandler } from "../../handler/types.ts";
import { createDevPki } from "../pki.ts";
import { TimeoutError } from "../types.ts";
import { createDenoH3Server } from "./h3_server.ts";
import { createDenoH3Client } from "./h3_client.ts";
import { needsTool, until } from "../../tests/support.ts";

const pki = await createDevPki();
const serverTls = { cert: pki.serverCertPem, key: pki.serverKeyPem };
const trust = { ca: pki.caCertPem, serverName: "localhost" };

async function withPair(
  fn: (client: Awaited<ReturnType<typeof createDenoH3Client>>, url: string) => Promise<void>,
  handler: SbiHandler = createHandler(),
  serverOptions: Record<string, unknown> = {},
): Promise<void> {
  const server = await createDenoH3Server(handler, { tls: serverTls, ...serverOptions });
  const client = await createDenoH3Client(server.url, { tls: trust });
  try {
    await fn(client, server.url);
  } finally {
    await client.close();
    await server.close();
  }
}

for (const size of [1, 256, 16 * 1024, 1024 * 1024]) {
  Deno.test(`quinn h3 returns the handler's exact bytes for a ${size} B GET`, async () => {
    const handler = createHandler();
    const path = `/nbench/v1/payload?size=${size}`;
    const direct = await handler({
      method: "GET",
      path: "/nbench/v1/payload",
      query: new URLSearchParams({ size: String(size) }),
      headers: {},
      body: new Uint8Array(),
    });
    await withPair(async (client) => {
      const res = await client.request({ path });
      assert.equal(res.status, 200);
      assert.equal(res.headers["content-type"], "application/json");
      assert.deepEqual(res.body, direct.body);
    }, handler);
  });
}

Deno.test("quinn h3 echoes a 16 KiB POST and runs 200 requests on one connection, 20 at a time", async () => {
  await withPair(async (client) => {
    const body = new Uint8Array(16384).map((_, i) => (i * 7) & 0xff);
    const res = await client.request({
      method: "POST",
      path: "/nbench/v1/echo",
      headers: { "content-type": "application/octet-stream" },
      body,
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, body);
    for (let round = 0; round < 10; round++) {
      const all = await Promise.all(
        Array.from({ length: 20 }, () => client.request({ path: "/nbench/v1/payload?size=256" })),
      );
      for (const r of all) assert.equal(r.body.length, 256);
    }
  });
});

Deno.test("quinn h3 sends the SBI headers the handler sees", async () => {
  let seen: Record<string, string> = {};
  const inner = createHandler();
  const handler: SbiHandler = (req) => {
    seen = req.headers;
    return inner(req);
  };
  await withPair(async (client) => {
    await client.request({ path: "/nbench/v1/payload?size=16", timeoutMs: 3000 });
    assert.match(seen["traceparent"], /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    assert.equal(seen["3gpp-sbi-max-rsp-time"], "3000");
    assert.match(seen["user-agent"], /^SMF-/);
    assert.ok(seen["3gpp-sbi-sender-timestamp"]);
  }, handler);
});

Deno.test("quinn h3 answers a body over the limit with the handler's 413 and keeps serving", async () => {
  const limit = 4096;
  await withPair(
    async (client) => {
      const res = await client.request({
        method: "POST",
        path: "/nbench/v1/echo",
        body: new Uint8Array(limit * 4),
      });
      assert.equal(res.status, 413);
      assert.equal(JSON.parse(new TextDecoder().decode(res.body)).cause, "PAYLOAD_TOO_LARGE");
      const ok = await client.request({ path: "/nbench/v1/payload?size=100" });
      assert.equal(ok.status, 200);
    },
    createHandler({ maxBodyBytes: limit }),
    { maxBodyBytes: limit },
  );
});

Deno.test("quinn h3 client times a stalled request out and the connection keeps working", async () => {
  const inner = createHandler();
  const release = Promise.withResolvers<void>();
  const handler: SbiHandler = async (req) => {
    if (req.path.startsWith("/slow")) await release.promise; // held until the client gave up
    return inner(req);
  };
  await withPair(async (client) => {
    try {
      await assert.rejects(client.request({ path: "/slow", timeoutMs: 200 }), TimeoutError);
      const ok = await client.request({ path: "/nbench/v1/payload?size=10" });
      assert.equal(ok.status, 200);
    } finally {
      release.resolve();
    }
  }, handler);
});

Deno.test("quinn h3 client refuses -k and client certificates with one line each", async () => {
  await assert.rejects(
    createDenoH3Client("https://127.0.0.1:1", { tls: { insecure: true } }),
    /cannot skip certificate verification/,
  );
  await assert.rejects(
    createDenoH3Client("https://127.0.0.1:1", {
      tls: { cert: pki.clientCertPem, key: pki.clientKeyPem },
    }),
    /cannot send a client certificate/,
  );
});

Deno.test("quinn h3 keeps serving after junk and truncated datagrams at its port", async () => {
  await withPair(async (client, url) => {
    const port = Number(new URL(url).port);
    const sock = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    try {
      const rng = (n: number) => crypto.getRandomValues(new Uint8Array(n));
      for (let i = 0; i < 2000; i++) {
        const junk = rng(1 + (i * 37) % 1400);
        if (i % 3 === 0) junk[0] = 0xc0 | (junk[0] & 0x0f); // looks like a long-header Initial
        await sock.send(junk, { transport: "udp", hostname: "127.0.0.1", port });
      }
    } finally {
      sock.close();
    }
    const res = await client.request({ path: "/nbench/v1/payload?size=64" });
    assert.equal(res.status, 200);
    assert.equal(res.body.length, 64);
  });
});

Deno.test("quinn h3 runs at most 100 requests of one connection at once, whatever the client asks", async () => {
  let running = 0, peak = 0;
  const release = Promise.withResolvers<void>();
  const inner = createHandler();
  const handler: SbiHandler = async (req) => {
    peak = Math.max(peak, ++running);
    if (running >= 100) release.resolve();
    await release.promise;
    running--;
    return inner(req);
  };
  await withPair(async (client) => {
    const all = Array.from(
      { length: 300 },
      () => client.request({ path: "/nbench/v1/payload?size=8", timeoutMs: 20_000 }),
    );
    const res = await Promise.all(all);
    assert.equal(res.filter((r) => r.status === 200).length, 300);
    assert.equal(peak, 100, "QUIC stream credit holds the connection at 100 requests in flight");
  }, handler);
});

Deno.test({
  name:
    "quinn h3 server closes a connection whose peer leaves a response unread past the stall timeout, and serves others meanwhile",
  ignore: needsTool("gtlsclient", "ngtcp2-client"),
  fn: async () => {
    const server = await createDenoH3Server(createHandler(), {
      tls: serverTls,
      stallTimeoutMs: 300,
    });
    const attacker = new Deno.Command("gtlsclient", {
      args: [
        "-q",
        "--max-data=1",
        "--max-window=1",
        "--max-stream-window=1",
        "--max-stream-data-bidi-local=1",
        "--timeout=30s",
        "127.0.0.1",
        String(server.port),
        `${server.url}/nbench/v1/payload?size=${1024 * 1024}`,
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
    const client = await createDenoH3Client(server.url, { tls: trust });
    try {
      await client.request({ path: "/nbench/v1/payload?size=16" });
      await until(() => server.connectionCount === 2, "the attacker to connect");
      await until(() => server.connectionCount === 1, "the stalled connection to be closed");
      const res = await client.request({ path: "/nbench/v1/payload?size=16384" });
      assert.equal(res.body.length, 16384);
    } finally {
      try {
        attacker.kill("SIGKILL");
      } catch {
        // already gone
      }
      await attacker.status;
      await client.close();
      await server.close();
    }
  },
});
