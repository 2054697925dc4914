/**
 * The deno stack's h3 (Deno's QUIC, quinn with rustls, and nghttp3) against
 * ngtcp2's own example peers (ngtcp2 with GnuTLS) and against sbilab's native
 * h3 ends: every pairing carries the same bytes.
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import { createDevPki } from "../transports/pki.ts";
import { createDenoH3Server } from "../transports/deno/h3_server.ts";
import { createDenoH3Client } from "../transports/deno/h3_client.ts";
import { createNativeH3Client, createNativeH3Server } from "../transports/h3/mod.ts";
import { runGtlsClient, startGtlsServer } from "../interop/peers.ts";
import { needsTool } from "./support.ts";

const pki = await createDevPki();
const serverTls = { cert: pki.serverCertPem, key: pki.serverKeyPem };
const trust = { ca: pki.caCertPem, serverName: "localhost" };

Deno.test({
  name: "gtlsclient downloads 1 KiB and 1 MiB from the quinn h3 server",
  ignore: needsTool("gtlsclient", "ngtcp2-client"),
  async fn() {
    const server = await createDenoH3Server(createHandler(), { tls: serverTls });
    try {
      const urls = [1024, 1 << 20].map((n) =>
        `https://localhost:${server.port}/nbench/v1/payload?size=${n}`
      );
      const run = await runGtlsClient("127.0.0.1", server.port, urls);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.files.get("payload?size=1024"), 1024);
      assert.equal(run.files.get("payload?size=1048576"), 1 << 20);
    } finally {
      await server.close();
    }
  },
});

Deno.test({
  name: "the quinn h3 client gets gtlsserver's 1 KiB and 256 KiB answers",
  ignore: needsTool("gtlsserver", "ngtcp2-server"),
  async fn() {
    const peer = await startGtlsServer(pki);
    const client = await createDenoH3Client(peer.origin, { tls: trust });
    try {
      for (const size of [1024, 256 * 1024]) {
        const res = await client.request({ path: peer.pathFor(size) });
        assert.equal(res.status, 200);
        assert.equal(res.body.length, size);
      }
    } finally {
      await client.close();
      await peer.close();
    }
  },
});

Deno.test("the native h3 client and the quinn h3 server exchange the handler's bytes both ways", async () => {
  const handler = createHandler();
  const quinn = await createDenoH3Server(handler, { tls: serverTls });
  const native = await createNativeH3Server(handler, { tls: serverTls });
  const toQuinn = await createNativeH3Client(quinn.url, { tls: trust });
  const toNative = await createDenoH3Client(native.url, { tls: trust });
  try {
    const body = new Uint8Array(20000).map((_, i) => i & 0xff);
    for (const client of [toQuinn, toNative]) {
      const res = await client.request({ method: "POST", path: "/nbench/v1/echo", body });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, body);
    }
  } finally {
    await toQuinn.close();
    await toNative.close();
    await quinn.close();
    await native.close();
  }
});
