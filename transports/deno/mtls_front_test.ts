import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import { createDevPki } from "../pki.ts";
import { createDenoH2TlsServer } from "./server.ts";
import * as h2 from "../../soak/h2_frames.ts";

/** ms until the server ends `conn` (EOF or reset), bounded by `ms`. */
async function endedAfter(conn: Deno.Conn, ms: number): Promise<number> {
  const start = Date.now();
  const timer = setTimeout(() => conn.close(), ms);
  try {
    while ((await conn.read(new Uint8Array(4096))) !== null) { /* discard */ }
  } catch {
    // reset by the server, or closed by the timer
  } finally {
    clearTimeout(timer);
  }
  return Date.now() - start;
}

Deno.test("the mutual-TLS front closes a connection that never completes its handshake", async () => {
  const pki = await createDevPki();
  const server = await createDenoH2TlsServer(createHandler(), {
    tls: {
      cert: pki.serverCertPem,
      key: pki.serverKeyPem,
      ca: pki.caCertPem,
      requireClientCert: true,
    },
    handshakeTimeoutMs: 500,
  });
  try {
    const silent = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
    const ms = await endedAfter(silent, 5000);
    try {
      silent.close();
    } catch { /* closed by the timer */ }
    assert.ok(ms >= 400 && ms < 3000, `closed after ${ms} ms (handshake timeout 500 ms)`);

    // A client that completed its handshake and started a request stays past that timeout.
    const ok = await Deno.connectTls({
      hostname: "127.0.0.1",
      port: server.port,
      caCerts: [pki.caCertPem],
      alpnProtocols: ["h2"],
      cert: pki.clientCertPem,
      key: pki.clientKeyPem,
    });
    const frames = [
      h2.PREFACE,
      h2.settingsFrame([]),
      h2.headersFrame(1, h2.requestBlock("GET", "/nbench/v1/payload?size=10", "x", "https")),
    ];
    for (const f of frames) await ok.write(f);
    const stayed = await endedAfter(ok, 1500);
    try {
      ok.close();
    } catch { /* closed by the timer */ }
    assert.ok(stayed >= 1400, `an established connection was closed after ${stayed} ms`);
  } finally {
    await server.close();
  }
});
