/**
 * Our h3 client inside a link emulator namespace, for the impaired-path
 * interop cases: `deno run -A --unstable-net _ns_client.ts ORIGIN PLAN`, where
 * PLAN is JSON `{ paths: string[], sizes: number[], connections: number }`.
 * Prints one JSON line `{ passed, detail }` and exits 0.
 */
import { createNativeH3Client } from "../transports/h3/client.ts";

const [origin, planText] = Deno.args;
const plan = JSON.parse(planText) as { paths: string[]; sizes: number[]; connections: number };

async function once(c: number): Promise<string | undefined> {
  // 30 % loss both ways can take several PTO rounds, each twice the last: allow 20 s, not 5 s.
  const client = await createNativeH3Client(origin, {
    tls: { insecure: true },
    timeoutMs: 30_000,
    handshakeTimeoutMs: 20_000,
  });
  try {
    const res = await Promise.all(plan.paths.map((path) => client.request({ path })));
    const got = res.map((r) => r.body.length);
    if (got.some((n, i) => n !== plan.sizes[i])) {
      return `connection ${c + 1}: got ${got.join(", ")} for ${plan.sizes.join(", ")} bytes`;
    }
    return undefined;
  } finally {
    await client.close();
  }
}

let detail: string | undefined;
for (let c = 0; c < plan.connections && !detail; c++) {
  // The server may still be binding: a request refused at once (ICMP) is tried again, 5 s at most.
  for (let attempt = 0;; attempt++) {
    const start = performance.now();
    try {
      detail = await once(c);
      break;
    } catch (err) {
      if (attempt < 50 && c === 0 && performance.now() - start < 200) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      detail = `connection ${c + 1}: ${(err as Error).message.split("\n")[0]}`;
      break;
    }
  }
}
console.log(JSON.stringify({ passed: !detail, detail: detail ?? "" }));
