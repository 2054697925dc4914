/**
 * Limits of the h3 server: a body over the limit gets the handler's own 413
 * and a clean end of stream, a peer that keeps its flow-control window shut
 * holds a bounded number of response bytes and is closed after the stall
 * timeout, and silent handshakes and idle connections are dropped on time.
 * Every bound asserted here is stated in the test's name.
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import {
  createNativeH3Client,
  createNativeH3Server,
  type H3SbiServer,
} from "../transports/h3/mod.ts";
import { H3ClientConn } from "../transports/h3/h3_client_conn.ts";
import { H3Config } from "../transports/h3/h3_config.ts";
import { loadH3Library } from "../transports/h3/loader.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import { echoPost, needsTool, testPki, until } from "./support.ts";

const ignore = H3_SKIP !== null;
const MiB = 1024 * 1024;

async function serverTls() {
  const pki = await testPki();
  return { cert: pki.serverCertPem, key: pki.serverKeyPem };
}

/**
 * Sends `count` first Initials to the server at `port` from `sock`, each of a
 * client that never says more (a replayed Initial looks the same); returns the
 * size of the last one.
 */
async function sendAbandonedInitials(
  symbols: Awaited<ReturnType<typeof loadH3Library>>["symbols"],
  sock: Deno.DatagramConn,
  port: number,
  count: number,
): Promise<number> {
  using config = new H3Config(symbols, false, { verifyPeer: false });
  const out = new Uint8Array(1500);
  let n = 0;
  for (let i = 0; i < count; i++) {
    using conn = new H3ClientConn(symbols, config, {
      serverName: "localhost",
      localIp: "127.0.0.1",
      localPort: (sock.addr as Deno.NetAddr).port,
      remoteIp: "127.0.0.1",
      remotePort: port,
    });
    n = conn.send(out);
    await sock.send(out.subarray(0, n), { transport: "udp", hostname: "127.0.0.1", port });
  }
  return n;
}

Deno.test({
  name:
    "h3 answers a body over the limit with the handler's own 413 bytes before reading it all, ends the stream cleanly and keeps serving",
  ignore,
  fn: async () => {
    const LIMIT = 4096;
    const handler = createHandler({ maxBodyBytes: LIMIT });
    // What the handler itself answers to a body over its limit.
    const want = await handler({
      method: "POST",
      path: "/nbench/v1/echo",
      query: new URLSearchParams(),
      headers: { "content-type": "application/octet-stream" },
      body: new Uint8Array(LIMIT + 1),
    });
    assert.equal(want.status, 413);
    const server = await createNativeH3Server(handler, {
      tls: await serverTls(),
      maxBodyBytes: LIMIT,
    });
    const client = await createNativeH3Client(server.url, {
      tls: { ca: (await testPki()).caCertPem },
      timeoutMs: 10_000,
    });
    try {
      assert.equal((await client.request(echoPost(new Uint8Array(LIMIT)))).status, 200);
      for (const size of [LIMIT + 1, 64 * 1024, 4 * MiB]) {
        const res = await client.request(echoPost(new Uint8Array(size)));
        assert.equal(res.status, 413, `${size} bytes`);
        assert.equal(res.headers["content-type"], "application/problem+json");
        assert.deepEqual(res.body, want.body, `${size} bytes`);
      }
      // Reading stopped early: far less than the 4 MiB body crossed the wire.
      const got = server.datagramStats()!.bytesReceived;
      assert.ok(got < 2 * MiB, `the server received ${got} bytes`);
      // Every stream ended (no half-open stream left behind) and the connection still serves.
      await until(() => server.openStreams === 0, "every stream to end", 2000);
      assert.equal((await client.request(echoPost(new Uint8Array(10)))).status, 200);
    } finally {
      await client.close();
      await server.close();
    }
  },
});

Deno.test({
  name:
    "h3 holds at most 32 MiB of responses for a client that asks for 100 × 16 MiB with its window shut (RSS growth under 256 MiB), closes it after the 1.5 s stall timeout, and serves others meanwhile",
  ignore: ignore || needsTool("gtlsclient", "ngtcp2-client"),
  fn: async () => {
    const server: H3SbiServer = await createNativeH3Server(createHandler(), {
      tls: await serverTls(),
      maxQueuedBytesPerConnection: 32 * MiB,
      maxQueuedBytes: 64 * MiB,
      stallTimeoutMs: 1500,
    });
    const rss0 = Deno.memoryUsage().rss;
    const uris = Array.from(
      { length: 100 },
      (_, i) => `${server.url}/nbench/v1/payload?size=${16 * MiB}&i=${i}`,
    );
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
        ...uris,
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
    const client = await createNativeH3Client(server.url, {
      tls: { ca: (await testPki()).caCertPem },
      timeoutMs: 5000,
    });
    let peakRss = 0, peakQueued = 0;
    try {
      // Every request has arrived: held open for the shut window, or refused at once for want of room.
      await until(
        () => server.openStreams + server.refusedResponses >= 100,
        "the attack to start",
        5000,
      );
      const t0 = performance.now();
      await until(
        () => {
          peakRss = Math.max(peakRss, Deno.memoryUsage().rss);
          peakQueued = Math.max(peakQueued, server.datagramStats()!.queuedBytes);
          return server.connectionCount === 1; // only our client's connection is left
        },
        "the stalled connection to be closed",
        6000,
      );
      // Served beside the attack.
      const res = await client.request({ path: "/nbench/v1/payload?size=16384" });
      assert.equal(res.body.length, 16384);
      assert.ok(performance.now() - t0 < 6000);
      assert.ok(peakQueued > 0 && peakQueued <= 32 * MiB, `peak queued ${peakQueued}`);
      const growth = peakRss - rss0;
      assert.ok(growth < 256 * MiB, `RSS grew by ${(growth / MiB).toFixed(0)} MiB`);
    } finally {
      await client.close();
      try {
        attacker.kill("SIGKILL");
      } catch {
        // already gone
      }
      await attacker.status;
      await server.close();
    }
  },
});

Deno.test({
  name:
    "h3 server drops a connection whose client goes silent after its first Initial within the 300 ms handshake timeout (+1 s)",
  ignore,
  fn: async () => {
    const server = await createNativeH3Server(createHandler(), {
      tls: await serverTls(),
      handshakeTimeoutMs: 300,
    });
    const { symbols } = await loadH3Library();
    const sock = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    try {
      const n = await sendAbandonedInitials(symbols, sock, server.port, 1);
      assert.ok(n >= 1200, "a client Initial is at least 1200 bytes");
      await until(() => server.connectionCount === 1, "a connection to start", 1000);
      const t0 = performance.now();
      await until(() => server.connectionCount === 0, "the connection to be dropped", 1300);
      assert.ok(performance.now() - t0 < 1300);
    } finally {
      sock.close();
      await server.close();
    }
  },
});

Deno.test({
  name:
    "h3 server holds at most 32 handshakes for clients silent after their first Initial; past them a new client gets a Retry and is served",
  ignore,
  fn: async () => {
    const server = await createNativeH3Server(createHandler(), { tls: await serverTls() });
    const { symbols } = await loadH3Library();
    const sock = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    const client = await createNativeH3Client(server.url, {
      tls: { ca: (await testPki()).caCertPem },
    });
    try {
      // 40 first Initials, each of a client that never says more (a replayed Initial looks the same).
      await sendAbandonedInitials(symbols, sock, server.port, 40);
      await until(() => (server.datagramStats()?.retries ?? 0) >= 8, "Retries past the cap", 2000);
      assert.equal(server.connectionCount, 32, "32 handshakes held, the rest answered statelessly");
      const res = await client.request({ path: "/nbench/v1/payload?size=10" });
      assert.equal(res.status, 200);
      assert.equal(client.datagramStats()?.retries, 1, "the new client came in through a Retry");
      assert.equal(server.connectionCount, 33);
    } finally {
      sock.close();
      await client.close();
      await server.close();
    }
  },
});

Deno.test({
  name:
    "h3 server counts its handshakes exactly: after 40 completed and 40 abandoned handshakes, once the abandoned ones timed out (300 ms), a new client is served without a Retry",
  ignore,
  fn: async () => {
    const server = await createNativeH3Server(createHandler(), {
      tls: await serverTls(),
      handshakeTimeoutMs: 300,
    });
    const { symbols } = await loadH3Library();
    const sock = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    const tls = { ca: (await testPki()).caCertPem };
    try {
      // Completed handshakes, kept open: each must give its place back when it completes (a
      // leak here would fill the 32 places, and the 33rd client would get a Retry).
      const done = [];
      try {
        for (let i = 0; i < 40; i++) {
          const client = await createNativeH3Client(server.url, { tls });
          done.push(client);
          const res = await client.request({ path: "/nbench/v1/payload?size=10" });
          assert.equal(res.status, 200);
          assert.equal(client.datagramStats()?.retries, 0, `completed client ${i} without a Retry`);
        }
      } finally {
        for (const client of done) await client.close();
      }
      // Abandoned handshakes: 40 first Initials of clients that never say more; 32 are held.
      await sendAbandonedInitials(symbols, sock, server.port, 40);
      await until(() => (server.datagramStats()?.retries ?? 0) >= 8, "Retries past the cap", 2000);
      const retries = server.datagramStats()!.retries;
      // Each abandoned handshake must give its place back when it times out and is dropped.
      await until(() => server.connectionCount === 0, "every connection to be dropped", 5000);
      const client = await createNativeH3Client(server.url, { tls });
      try {
        assert.equal((await client.request({ path: "/nbench/v1/payload?size=10" })).status, 200);
        assert.equal(client.datagramStats()?.retries, 0, "the new client came in without a Retry");
        assert.equal(server.datagramStats()!.retries, retries, "the server sent no Retry since");
      } finally {
        await client.close();
      }
    } finally {
      sock.close();
      await server.close();
    }
  },
});

Deno.test({
  name:
    "h3 server closes an idle connection within its 300 ms idle timeout (+1 s) even when the client would wait 30 s",
  ignore,
  fn: async () => {
    const server = await createNativeH3Server(createHandler(), {
      tls: await serverTls(),
      idleTimeoutMs: 300,
    });
    const client = await createNativeH3Client(server.url, {
      tls: { ca: (await testPki()).caCertPem },
      idleTimeoutMs: 30_000,
    });
    try {
      await client.request({ path: "/nbench/v1/payload?size=10" });
      assert.equal(server.connectionCount, 1);
      const t0 = performance.now();
      await until(() => server.connectionCount === 0, "the idle connection to be dropped", 1300);
      assert.ok(performance.now() - t0 < 1300);
    } finally {
      await client.close();
      await server.close();
    }
  },
});

Deno.test({
  name:
    "an h3 server built without options applies the same limits as a native h2c server and a deno h2c server built without options: the shared defaults",
  ignore,
  fn: async () => {
    const { createNativeH2cServer } = await import("../transports/h2/server.ts");
    const { createDenoH2cServer } = await import("../transports/deno/server.ts");
    const { DEFAULT_SERVER_LIMITS } = await import("../transports/server_limits.ts");
    const handler = createHandler();
    const h3 = await createNativeH3Server(handler, { tls: await serverTls() });
    const h2 = await createNativeH2cServer(handler);
    const deno = await createDenoH2cServer(handler);
    try {
      assert.deepEqual(h3.limits, h2.limits);
      assert.deepEqual(deno.limits, h2.limits);
      assert.deepEqual(h3.limits, { ...DEFAULT_SERVER_LIMITS });
      assert.equal(h3.limits.idleTimeoutMs, 60_000);
      assert.equal(h3.limits.handshakeTimeoutMs, 10_000);
      assert.equal(h3.limits.maxQueuedResponseBytes, 64 * MiB);
    } finally {
      await Promise.all([h3.close(), h2.close(), deno.close()]);
    }
  },
});
