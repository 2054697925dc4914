/**
 * Round-trip probe: warm GET over one reused connection, a new stream per
 * request, h3 (by default: 1200-byte datagrams and PMTUD; with an explicit
 * 16 KiB datagram size for loopback; at 1452 bytes, Ethernet-sized) against
 * h2 over TLS, all in one process with the rounds interleaved so drift on a
 * shared machine hits every transport alike.
 * Prints medians and ratios; asserts nothing (a benchmark report, not a test).
 *
 * Usage: deno run -A --unstable-net scripts/dev/h3_rtt_probe.ts [requests=2000] [sizes=256,16384] [udp=0,16384,1452]
 * (udp 0: the default, 1200-byte datagrams and path MTU discovery)
 */
import { createHandler } from "../../handler/mod.ts";
import { median } from "../../bench/stats.ts";
import { createDevPki } from "../../transports/pki.ts";
import { createH2TlsServer, createNativeH2Client } from "../../transports/h2/mod.ts";
import type { SbiClient, SbiServer } from "../../transports/types.ts";
import { createH3Client, createH3Server } from "../../transports/h3/mod.ts";

async function sample(client: SbiClient, size: number, n: number, out: number[]): Promise<void> {
  const path = `/nbench/v1/payload?size=${size}`;
  for (let i = 0; i < 50; i++) await client.request({ path });
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await client.request({ path });
    out.push((performance.now() - t0) * 1000);
    if (r.body.length !== size) throw new Error(`Got ${r.body.length} bytes, expected ${size}`);
  }
}

if (import.meta.main) {
  const n = Number(Deno.args[0] ?? 2000);
  const sizes = (Deno.args[1] ?? "256,16384").split(",").map(Number);
  const udp = Deno.args[2] === "none"
    ? []
    : (Deno.args[2] ?? "0,16384,1452").split(",").map(Number);
  const rounds = 10;
  const pki = await createDevPki();
  const tls = { cert: pki.serverCertPem, key: pki.serverKeyPem };
  const handler = createHandler();
  const servers: SbiServer[] = [];
  const clients: [string, SbiClient][] = [];
  try {
    const h2s = await createH2TlsServer(handler, { tls });
    servers.push(h2s);
    clients.push(["h2-tls", await createNativeH2Client(h2s.url, { tls: { ca: pki.caCertPem } })]);
    for (const mtu of udp) {
      const maxUdpPayload = mtu || undefined;
      const s = await createH3Server(handler, { tls, maxUdpPayload });
      servers.push(s);
      const c = await createH3Client(s.url, { tls: { ca: pki.caCertPem }, maxUdpPayload });
      clients.push([`h3@${mtu || "pmtud"}`, c]);
    }
    for (const size of sizes) {
      const samples = clients.map(() => [] as number[]);
      for (let round = 0; round < rounds; round++) {
        for (let i = 0; i < clients.length; i++) {
          await sample(clients[i][1], size, n / rounds, samples[i]);
        }
      }
      const base = median(samples[0]);
      const parts = clients.map(([name], i) => {
        const m = median(samples[i]);
        return i === 0
          ? `${name} ${m.toFixed(1)} µs`
          : `${name} ${m.toFixed(1)} µs (${(m / base).toFixed(2)}×)`;
      });
      console.log(`${size} B: ${parts.join(", ")}`);
    }
  } finally {
    for (const [, c] of clients) await c.close();
    for (const s of servers) await s.close();
  }
}
