import { createDevPki } from "../transports/pki.ts";
import { createHandler } from "../handler/mod.ts";
import { createNativeH2cServer, createNativeH2TlsServer } from "../transports/h2/native_server.ts";
import { createNativeH2Client } from "../transports/h2/native_client.ts";
import { TicketCache } from "../transports/h2/ticket_cache.ts";
const pki = await createDevPki();
const med = (a: number[]) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
const h2c = await createNativeH2cServer(createHandler());
const tls = await createNativeH2TlsServer(createHandler(), { tls: { cert: pki.serverCertPem, key: pki.serverKeyPem } });
const rows: Record<string, number[]> = { h2c: [], full: [], resumed: [] };
const hb: Record<string, number> = {};
const cache = new TicketCache();
for (let i = 0; i < 60; i++) {
  for (const kind of ["h2c", "full", "resumed"]) {
    if (kind === "full") cache.clear();
    const c = await createNativeH2Client(kind === "h2c" ? h2c.url : tls.url, { tls: { ca: pki.caCertPem }, ticketCache: cache });
    const t0 = performance.now();
    await c.request({ path: "/nbench/v1/payload?size=256" });
    rows[kind].push(performance.now() - t0);
    if (kind !== "h2c") { const info = await c.connectionInfo(); hb[kind] = info.handshakeBytes.sent + info.handshakeBytes.received; if (kind === "resumed" && !info.resumed) throw new Error("not resumed"); }
    await c.close();
  }
}
for (const [k, v] of Object.entries(rows)) console.log(`${k}: connect+first request median ${(med(v.slice(5)) * 1000).toFixed(0)} us ${hb[k] ? `handshake bytes ${hb[k]}` : ""}`);
await h2c.close(); await tls.close();
