/**
 * Datagram sizes: standard QUIC by default (1200 bytes, then path MTU
 * discovery), never above the peer's max_udp_payload_size, and larger
 * datagrams only with the explicit `maxUdpPayload`, which both sides report.
 * The clients here read at most what they advertise: a larger datagram is
 * dropped unread (and counted), so a server that overshoots never completes.
 */
import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import { createDevPki, type DevPki } from "../pki.ts";
import {
  createNativeH3Client,
  createNativeH3Server,
  type H3ClientOptions,
  type H3ServerOptions,
} from "./mod.ts";
import { H3ClientConn } from "./h3_client_conn.ts";
import { H3Config } from "./h3_config.ts";
import { loadH3Library } from "./loader.ts";
import { H3_SKIP } from "./_test_util.ts";

const ignore = H3_SKIP !== null;
const pki: DevPki = ignore ? ({} as DevPki) : await createDevPki();
const handler = createHandler();

async function fetchSizes(
  serverOptions: Omit<H3ServerOptions, "tls">,
  clientOptions: Omit<H3ClientOptions, "tls">,
  sizes = [16 * 1024, 1024 * 1024],
) {
  const server = await createNativeH3Server(handler, {
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    ...serverOptions,
  });
  const client = await createNativeH3Client(server.url, {
    tls: { ca: pki.caCertPem },
    timeoutMs: 15_000,
    ...clientOptions,
  });
  try {
    for (const size of sizes) {
      const res = await client.request({ path: `/nbench/v1/payload?size=${size}` });
      assert.equal(res.status, 200);
      assert.equal(res.body.length, size);
    }
    const c = client.datagramStats();
    const s = server.datagramStats();
    assert.ok(c && s);
    return { client: c, server: s, serverSetting: server.maxUdpPayload };
  } finally {
    await client.close();
    await server.close();
  }
}

Deno.test({
  name:
    "h3 server by default sends a client that advertises and reads at most 1452 B its 16 KiB and 1 MiB answers, in datagrams of 1200 B up to what PMTUD confirmed",
  ignore,
  fn: async () => {
    const r = await fetchSizes({}, { maxRecvUdpPayload: 1452 });
    assert.equal(r.serverSetting, undefined);
    assert.equal(r.client.oversizeDropped, 0);
    assert.equal(r.client.peerMaxPayload, 65527, "the server advertises the default limit");
    assert.ok(r.server.largestSent <= 1452, `server sent ${r.server.largestSent} B`);
    // PMTUD (ngtcp2 0.12 probes 1232, 1342, 1406 and 1444 bytes) found more than the minimum.
    assert.ok(r.server.largestSent > 1200, `server never probed above 1200 B`);
    assert.ok(r.client.largestSent <= 1452, `client sent ${r.client.largestSent} B`);
  },
});

Deno.test({
  name:
    "h3 server without the explicit option never sends above the peer's limit: a client advertising 1200 B gets 1 MiB in 1200 B datagrams",
  ignore,
  fn: async () => {
    const r = await fetchSizes({}, { maxRecvUdpPayload: 1200 });
    assert.equal(r.client.oversizeDropped, 0);
    assert.equal(r.server.largestSent, 1200);
    assert.equal(r.client.largestReceived, 1200);
  },
});

Deno.test({
  name:
    "h3 explicit maxUdpPayload is capped at the peer's advertised limit: 16384 against a client reading 1300 B sends 1300 B datagrams",
  ignore,
  fn: async () => {
    const r = await fetchSizes({ maxUdpPayload: 16384 }, { maxRecvUdpPayload: 1300 });
    assert.equal(r.serverSetting, 16384);
    assert.equal(r.client.oversizeDropped, 0);
    assert.equal(r.server.largestSent, 1300);
  },
});

Deno.test({
  name:
    "h3 explicit maxUdpPayload of 16384 on both sides sends 16 KiB datagrams on loopback, and the client reports what it asked for and what it got",
  ignore,
  fn: async () => {
    const r = await fetchSizes({ maxUdpPayload: 16384 }, { maxUdpPayload: 16384 });
    assert.equal(r.serverSetting, 16384);
    assert.equal(r.server.largestSent, 16384);
    assert.equal(r.client.largestReceived, 16384);
    assert.equal(r.client.pathMaxPayload, 16384);
  },
});

Deno.test({
  name:
    "h3 connection drops unread, and counts, a datagram larger than the max_udp_payload_size it advertises",
  ignore,
  fn: async () => {
    const { symbols } = await loadH3Library();
    using config = new H3Config(symbols, false, { verifyPeer: false, maxRecvUdpPayload: 1300 });
    using conn = new H3ClientConn(symbols, config, {
      serverName: "localhost",
      localIp: "127.0.0.1",
      localPort: 40000,
      remoteIp: "127.0.0.1",
      remotePort: 40001,
    });
    // Junk either way: one within the limit reaches QUIC (and is rejected there), one above it
    // never does.
    conn.recv(new Uint8Array(1300).fill(0x40));
    conn.recv(new Uint8Array(1301).fill(0x40));
    const st = conn.stats();
    assert.equal(st?.datagramsReceived, 1);
    assert.equal(st?.largestReceived, 1300);
    assert.equal(st?.oversizeDropped, 1);
  },
});

Deno.test({
  name:
    "h3 client's connectionInfo names the libraries, the negotiated TLS 1.3 suite and group, and the largest datagram either way",
  ignore,
  fn: async () => {
    for (const maxUdpPayload of [undefined, 16384]) {
      const server = await createNativeH3Server(handler, {
        tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
        maxUdpPayload,
      });
      const client = await createNativeH3Client(server.url, {
        tls: { ca: pki.caCertPem },
        maxUdpPayload,
      });
      try {
        assert.equal(client.connectionInfo?.(), undefined);
        await client.request({ path: "/nbench/v1/payload?size=65536" });
        const info = client.connectionInfo!()!;
        assert.equal(info.stack, "native");
        assert.match(info.implementation, /^ngtcp2 0\.\d+\.\d+, nghttp3 0\.\d+\.\d+$/);
        assert.match(info.tls?.library ?? "", /^GnuTLS \d/);
        assert.equal(info.tls?.version, "TLS1.3");
        assert.equal(info.tls?.suite, "TLS_AES_128_GCM_SHA256");
        assert.equal(info.tls?.group, "SECP256R1");
        const st = client.datagramStats()!;
        assert.equal(info.maxDatagramBytes, Math.max(st.largestSent, st.largestReceived));
        if (maxUdpPayload) assert.equal(info.maxDatagramBytes, 16384);
        else assert.ok(info.maxDatagramBytes! <= 1452, `${info.maxDatagramBytes}`);
      } finally {
        await client.close();
        await server.close();
      }
      // The bench reads it after closing: the last connection's figures stay.
      assert.equal(client.connectionInfo!()!.tls?.suite, "TLS_AES_128_GCM_SHA256");
    }
  },
});
