/**
 * TLS negatives (unknown CA, wrong host name, mTLS without a client
 * certificate) and the client's per-request timeout, on every TLS transport
 * (h2-tls on both stacks' servers) and on h2c for the timeout.
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import type { SbiHandler } from "../handler/types.ts";
import {
  createClient,
  createServer,
  TimeoutError,
  TransportError,
  type TransportName,
} from "../transports/mod.ts";
import { createDevPki } from "../transports/pki.ts";
import { testPki, testTransports } from "./support.ts";

type Stack = "native" | "deno" | undefined;

const transports = await testTransports();
/** Every TLS transport on the default (native) server, plus h2-tls on the deno stack's server. */
const tlsCases: [TransportName, Stack][] = [
  ...transports.filter((t) => t !== "h2c").map((t): [TransportName, Stack] => [t, undefined]),
  ["h2-tls", "deno"],
];
const timeoutCases: [TransportName, Stack][] = [
  ...transports.map((t): [TransportName, Stack] => [t, undefined]),
  ["h2c", "deno"],
  ["h2-tls", "deno"],
  ["h3", "deno"],
];
const named = (transport: TransportName, stack: Stack) =>
  stack ? `${transport} (${stack} server)` : transport;

async function withServer<T>(
  transport: TransportName,
  opts: { requireClientCert?: boolean; handler?: SbiHandler; stack?: Stack },
  fn: (url: string) => Promise<T>,
): Promise<T> {
  const pki = await testPki();
  const server = await createServer(transport, opts.handler ?? createHandler(), {
    tls: {
      cert: pki.serverCertPem,
      key: pki.serverKeyPem,
      ca: pki.caCertPem,
      requireClientCert: opts.requireClientCert,
    },
    stack: opts.stack,
  });
  try {
    return await fn(server.url);
  } finally {
    await server.close();
  }
}

const PATH = "/nbench/v1/payload?size=64";

for (const [transport, stack] of tlsCases) {
  const name = named(transport, stack);
  Deno.test(`${name} client rejects a server whose CA it does not trust`, async () => {
    const other = await createDevPki({ caName: "someone else's CA" });
    await withServer(transport, { stack }, async (url) => {
      const client = await createClient(transport, url, {
        tls: { ca: other.caCertPem },
        timeoutMs: 3000,
      });
      try {
        await assert.rejects(client.request({ path: PATH }), TransportError);
      } finally {
        await client.close();
      }
    });
  });

  Deno.test(`${name} client rejects a certificate issued for another host name`, async () => {
    const pki = await testPki();
    const elsewhere = await createDevPki({ serverNames: ["nrf.example.org"] });
    const server = await createServer(transport, createHandler(), {
      tls: { cert: elsewhere.serverCertPem, key: elsewhere.serverKeyPem },
      stack,
    });
    const wrong = await createClient(transport, server.url, {
      tls: { ca: elsewhere.caCertPem },
      timeoutMs: 3000,
    });
    const right = await withServer(transport, { stack }, async (url) => {
      const c = await createClient(transport, url, { tls: { ca: pki.caCertPem } });
      try {
        return (await c.request({ path: PATH })).status;
      } finally {
        await c.close();
      }
    });
    try {
      await assert.rejects(wrong.request({ path: PATH }), TransportError);
      assert.equal(right, 200);
    } finally {
      await wrong.close();
      await server.close();
    }
  });

  Deno.test(`${name} server with mTLS rejects a client without a certificate and accepts one with`, async () => {
    const pki = await testPki();
    await withServer(transport, { requireClientCert: true, stack }, async (url) => {
      const anon = await createClient(transport, url, {
        tls: { ca: pki.caCertPem },
        timeoutMs: 3000,
      });
      const known = await createClient(transport, url, {
        tls: { ca: pki.caCertPem, cert: pki.clientCertPem, key: pki.clientKeyPem },
      });
      try {
        await assert.rejects(anon.request({ path: PATH }), TransportError);
        const r = await known.request({ path: PATH });
        assert.equal(r.status, 200);
        assert.equal(r.body.length, 64);
      } finally {
        await anon.close();
        await known.close();
      }
    });
  });

  Deno.test(`${name} server with mTLS rejects a client certificate from an unknown CA`, async () => {
    const pki = await testPki();
    const other = await createDevPki();
    await withServer(transport, { requireClientCert: true, stack }, async (url) => {
      const stranger = await createClient(transport, url, {
        tls: { ca: pki.caCertPem, cert: other.clientCertPem, key: other.clientKeyPem },
        timeoutMs: 3000,
      });
      try {
        await assert.rejects(stranger.request({ path: PATH }), TransportError);
      } finally {
        await stranger.close();
      }
    });
  });
}

for (const [transport, stack] of timeoutCases) {
  Deno.test(`${stack ? `${transport} (${stack} server and client)` : transport} client times out within timeout + 100 ms against a stalled handler, then still works`, async () => {
    const release = Promise.withResolvers<void>();
    const inner = createHandler();
    const stalling: SbiHandler = async (req) => {
      if (req.path === "/stall") await release.promise;
      return inner(req);
    };
    await withServer(transport, { handler: stalling, stack }, async (url) => {
      const pki = await testPki();
      const client = await createClient(transport, url, { tls: { ca: pki.caCertPem }, stack });
      try {
        await client.request({ path: PATH }); // warm: connection up
        const timeoutMs = 300;
        const t0 = performance.now();
        await assert.rejects(client.request({ path: "/stall", timeoutMs }), TimeoutError);
        const elapsed = performance.now() - t0;
        assert.ok(elapsed >= timeoutMs - 1, `fired early: ${elapsed.toFixed(1)} ms`);
        assert.ok(elapsed <= timeoutMs + 100, `fired late: ${elapsed.toFixed(1)} ms`);
        const after = await client.request({ path: PATH });
        assert.equal(after.status, 200);
      } finally {
        release.resolve();
        await client.close();
      }
    });
  });
}

Deno.test("h2c client times out against a TCP peer that accepts and never answers", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const c of listener) held.push(c);
  })();
  const client = await createClient("h2c", `http://127.0.0.1:${port}`);
  try {
    const t0 = performance.now();
    await assert.rejects(client.request({ path: "/x", timeoutMs: 250 }), TimeoutError);
    const elapsed = performance.now() - t0;
    assert.ok(elapsed >= 249 && elapsed <= 350, `elapsed ${elapsed.toFixed(1)} ms`);
  } finally {
    await client.close();
    listener.close();
    for (const c of held) c.close();
    await accepting.catch(() => {});
  }
});

Deno.test("h2c client reports a refused connection as a TransportError", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  const client = await createClient("h2c", `http://127.0.0.1:${port}`);
  try {
    await assert.rejects(client.request({ path: "/x", timeoutMs: 2000 }), TransportError);
  } finally {
    await client.close();
  }
});
