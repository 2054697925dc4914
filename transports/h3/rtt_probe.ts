/**
 * Round-trip probe: warm GET over one reused connection, a new stream per
 * request, h3 against h2 over TLS in the same run. Prints medians and ratios;
 * asserts nothing (a benchmark report, not a test).
 *
 * Usage: deno run -A --unstable-net transports/h3/rtt_probe.ts [requests=2000] [sizes=256,16384]
 */
import { createHandler } from "../../handler/mod.ts";
import { createDevPki } from "../pki.ts";
import { createH2Client, createH2TlsServer } from "../h2/mod.ts";
import type { SbiClient } from "../types.ts";
import { createH3Client, createH3Server } from "./mod.ts";

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function sample(client: SbiClient, size: number, n: number): Promise<number[]> {
  const path = `/nbench/v1/payload?size=${size}`;
  for (let i = 0; i < 200; i++) await client.request({ path });
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await client.request({ path });
    out.push((performance.now() - t0) * 1000);
    if (r.body.length !== size) throw new Error(`Got ${r.body.length} bytes, expected ${size}`);
  }
  return out;
}

if (import.meta.main) {
  const n = Number(Deno.args[0] ?? 2000);
  const sizes = (Deno.args[1] ?? "256,16384").split(",").map(Number);
  const pki = await createDevPki();
  const tls = { cert: pki.serverCertPem, key: pki.serverKeyPem };
  const handler = createHandler();
  const h2s = await createH2TlsServer(handler, { tls });
  const mtu = Deno.env.get("H3_MAX_UDP") ? Number(Deno.env.get("H3_MAX_UDP")) : undefined;
  const h3s = await createH3Server(handler, { tls, maxUdpPayload: mtu });
  const h2c = await createH2Client(h2s.url, { tls: { ca: pki.caCertPem } });
  const h3c = await createH3Client(h3s.url, { tls: { ca: pki.caCertPem }, maxUdpPayload: mtu });
  try {
    for (const size of sizes) {
      // Interleave rounds so drift on a shared machine hits both alike.
      const h2: number[] = [], h3: number[] = [];
      for (let round = 0; round < 4; round++) {
        h2.push(...await sample(h2c, size, n / 4));
        h3.push(...await sample(h3c, size, n / 4));
      }
      const m2 = median(h2), m3 = median(h3);
      console.log(
        `${size} B: h2-tls median ${m2.toFixed(1)} µs, h3 median ${m3.toFixed(1)} µs, h3/h2-tls ${
          (m3 / m2).toFixed(2)
        }×`,
      );
    }
  } finally {
    await h2c.close();
    await h3c.close();
    await h2s.close();
    await h3s.close();
  }
}
