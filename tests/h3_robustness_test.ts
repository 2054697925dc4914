/**
 * HTTP/3 under bad input and long use: garbage and truncated datagrams at the
 * server port, and many sequential requests on one connection. Memory bounds
 * are generous and stated; they catch leaks, not noise.
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import { createDevPki } from "../transports/pki.ts";
import { createH3Client, createH3Server } from "../transports/h3/mod.ts";
import { H3ClientConn, H3Config } from "../transports/h3/ffi.ts";
import { loadH3Library } from "../transports/h3/loader.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";

const ignore = H3_SKIP !== null;
const MiB = 1024 * 1024;

function rss(): number {
  return Deno.memoryUsage().rss;
}

/** A real first datagram (client Initial) from a fresh shim connection, to mutate. */
async function realInitial(port: number): Promise<Uint8Array> {
  const { symbols } = await loadH3Library();
  using config = new H3Config(symbols, false, { verifyPeer: false });
  using conn = new H3ClientConn(symbols, config, {
    serverName: "localhost",
    localIp: "127.0.0.1",
    localPort: 9,
    remoteIp: "127.0.0.1",
    remotePort: port,
  });
  const out = new Uint8Array(65536);
  const n = conn.send(out);
  assert.ok(n >= 1200, `Initial was ${n} bytes`);
  return out.slice(0, n);
}

Deno.test({
  name:
    "h3 server keeps serving after 20,000 random, truncated and corrupted datagrams, and its memory settles",
  ignore,
  fn: async () => {
    const pki = await createDevPki();
    const server = await createH3Server(createHandler(), {
      tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    });
    const client = await createH3Client(server.url, { tls: { ca: pki.caCertPem } });
    const sock = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    const to: Deno.NetAddr = { transport: "udp", hostname: "127.0.0.1", port: server.port };
    const conns = () => (server as unknown as { connectionCount: number }).connectionCount;
    try {
      const initial = await realInitial(server.port);
      const datagram = (i: number): Uint8Array => {
        switch (i % 4) {
          case 0: // random bytes, random length (including 0)
            return crypto.getRandomValues(new Uint8Array(Math.floor(Math.random() * 1500)));
          case 1: // a real Initial cut short
            return initial.slice(0, Math.floor(Math.random() * initial.length));
          case 2: { // a real Initial with a few bits flipped
            const d = initial.slice();
            for (let k = 0; k < 3; k++) d[Math.floor(Math.random() * d.length)] ^= 1 << (k + 1);
            return d;
          }
          default: { // short-header packets with random connection ids
            const d = crypto.getRandomValues(new Uint8Array(40 + Math.floor(Math.random() * 60)));
            d[0] = (d[0] & 0x3f) | 0x40;
            return d;
          }
        }
      };
      const burst = async (from: number, count: number) => {
        for (let i = from; i < from + count; i++) await sock.send(datagram(i), to);
        // A real request between bursts proves the server still serves.
        const res = await client.request({ path: "/nbench/v1/payload?size=64" });
        assert.equal(res.body.length, 64);
      };
      await burst(0, 2000);
      const before = rss();
      for (let i = 2000; i < 20000; i += 1000) await burst(i, 1000);
      // Connections started by corrupted Initials end at the 5 s handshake timeout.
      const deadline = Date.now() + 8000;
      while (conns() > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.equal(conns(), 1, "half-open connections were not reaped");
      const after = rss();
      const growth = (after - before) / MiB;
      console.log(`RSS after 18,000 bad datagrams: ${growth >= 0 ? "+" : ""}${growth.toFixed(1)} MiB`);
      // Stated bound: 48 MiB of growth over 18,000 datagrams (≈ 2.7 KiB each) would mean a leak.
      assert.ok(growth < 48, `RSS grew by ${growth.toFixed(1)} MiB`);
      const res = await client.request({ path: "/nbench/v1/payload?size=16384" });
      assert.equal(res.body.length, 16384);
    } finally {
      sock.close();
      await client.close();
      await server.close();
    }
  },
});

Deno.test({
  name: "h3 runs 10,000 sequential requests on one connection with bounded memory growth",
  ignore,
  fn: async () => {
    const pki = await createDevPki();
    const server = await createH3Server(createHandler(), {
      tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    });
    const client = await createH3Client(server.url, { tls: { ca: pki.caCertPem } });
    const conns = () => (server as unknown as { connectionCount: number }).connectionCount;
    try {
      const body = new Uint8Array(1024).fill(7);
      for (let i = 0; i < 1000; i++) {
        await client.request({ method: "POST", path: "/nbench/v1/echo", body });
      }
      const before = rss();
      for (let i = 0; i < 10000; i++) {
        const res = await client.request({ method: "POST", path: "/nbench/v1/echo", body });
        if (res.body.length !== body.length) {
          assert.fail(`request ${i} returned ${res.body.length} bytes`);
        }
      }
      const growth = (rss() - before) / MiB;
      console.log(`RSS after 10,000 requests: ${growth >= 0 ? "+" : ""}${growth.toFixed(1)} MiB`);
      assert.equal(conns(), 1, "requests did not share one connection");
      // Stated bound: 24 MiB over 10,000 requests (2.4 KiB per request) would mean per-request state leaks.
      assert.ok(growth < 24, `RSS grew by ${growth.toFixed(1)} MiB`);
    } finally {
      await client.close();
      await server.close();
    }
  },
});
