import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import type { SbiHandler } from "../../handler/types.ts";
import { createDevPki, type DevPki } from "../pki.ts";
import { TimeoutError, TransportError } from "../types.ts";
import { createNativeH3Client, createNativeH3Server } from "./mod.ts";
import { H3_SKIP } from "./_test_util.ts";
import { until } from "../../tests/support.ts";

const ignore = H3_SKIP !== null;
const pki: DevPki = ignore ? ({} as DevPki) : await createDevPki();
const serverTls = () => ({ cert: pki.serverCertPem, key: pki.serverKeyPem });
const trust = () => ({ ca: pki.caCertPem });

async function withServer(
  fn: (url: string) => Promise<void>,
  handler: SbiHandler = createHandler(),
  tls: Record<string, unknown> = serverTls(),
): Promise<void> {
  const server = await createNativeH3Server(handler, { tls });
  try {
    await fn(server.url);
  } finally {
    await server.close();
  }
}

function pattern(n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 131 + (i >> 8)) & 0xff;
  return b;
}

for (const size of [1, 256, 16 * 1024, 1024 * 1024, 16 * 1024 * 1024]) {
  Deno.test({
    name: `h3 client returns the handler's exact bytes for a ${size} B GET`,
    ignore,
    fn: async () => {
      const handler = createHandler();
      const direct = await handler({
        method: "GET",
        path: "/nbench/v1/payload",
        query: new URLSearchParams({ size: String(size) }),
        headers: {},
        body: new Uint8Array(0),
      });
      await withServer(async (url) => {
        const client = await createNativeH3Client(url, { tls: trust(), timeoutMs: 20000 });
        try {
          const res = await client.request({ path: `/nbench/v1/payload?size=${size}` });
          assert.equal(res.status, 200);
          assert.equal(res.body.length, size);
          assert.deepEqual(res.body, direct.body);
          assert.equal(res.headers["content-length"], String(size));
        } finally {
          await client.close();
        }
      }, handler);
    },
  });
}

for (const size of [0, 1, 256, 16 * 1024, 1024 * 1024, 16 * 1024 * 1024]) {
  Deno.test({
    name: `h3 client gets its ${size} B POST body echoed byte for byte`,
    ignore,
    fn: async () => {
      await withServer(async (url) => {
        const client = await createNativeH3Client(url, { tls: trust(), timeoutMs: 20000 });
        try {
          const body = pattern(size);
          const res = await client.request({
            method: "POST",
            path: "/nbench/v1/echo",
            headers: { "content-type": "application/octet-stream" },
            body,
          });
          assert.equal(res.status, 200);
          assert.equal(res.headers["content-type"], "application/octet-stream");
          assert.equal(res.body.length, size);
          assert.deepEqual(res.body, body);
        } finally {
          await client.close();
        }
      });
    },
  });
}

Deno.test({
  name:
    "h3 at 1452-byte datagrams (batched with UDP segmentation offload) echoes 16 KiB and 1 MiB POST bodies byte for byte, 20 at once",
  ignore,
  fn: async () => {
    const server = await createNativeH3Server(createHandler(), {
      tls: serverTls(),
      maxUdpPayload: 1452,
    });
    const client = await createNativeH3Client(server.url, {
      tls: trust(),
      timeoutMs: 20000,
      maxUdpPayload: 1452,
    });
    try {
      const bodies = Array.from({ length: 20 }, (_, i) => pattern(i % 2 ? 16 * 1024 : 1 << 20));
      for (const [i, b] of bodies.entries()) b[0] = i;
      const results = await Promise.all(bodies.map((body) =>
        client.request({
          method: "POST",
          path: "/nbench/v1/echo",
          headers: { "content-type": "application/octet-stream" },
          body,
        })
      ));
      for (const [i, res] of results.entries()) {
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, bodies[i]);
      }
    } finally {
      await client.close();
      await server.close();
    }
  },
});

Deno.test({
  name: "h3 client carries every SBI method and the SBI headers the h2 client sends",
  ignore,
  fn: async () => {
    const seen: { method: string; headers: Record<string, string>; body: number }[] = [];
    const handler: SbiHandler = (req) => {
      seen.push({ method: req.method, headers: req.headers, body: req.body.length });
      return Promise.resolve({ status: 200, headers: {}, body: new Uint8Array(0) });
    };
    await withServer(async (url) => {
      const client = await createNativeH3Client(url, {
        tls: trust(),
        nfType: "AMF",
        timeoutMs: 1500,
      });
      try {
        const trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]) {
          const hasBody = ["POST", "PUT", "PATCH"].includes(method);
          await client.request({
            method,
            path: "/m",
            headers: { traceparent: trace },
            body: hasBody ? new Uint8Array(3) : undefined,
          });
        }
      } finally {
        await client.close();
      }
    }, handler);
    assert.deepEqual(seen.map((s) => s.method), [
      "GET",
      "POST",
      "PUT",
      "PATCH",
      "DELETE",
      "OPTIONS",
      "HEAD",
    ]);
    for (const s of seen) {
      assert.match(s.headers["user-agent"], /^AMF-/);
      assert.equal(s.headers["3gpp-sbi-max-rsp-time"], "1500");
      assert.match(
        s.headers["3gpp-sbi-sender-timestamp"],
        /^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2}\.\d{3} GMT$/,
      );
      assert.match(
        s.headers["traceparent"],
        /^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/,
      );
      assert.notEqual(
        s.headers["traceparent"],
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      );
    }
    assert.deepEqual(seen.map((s) => s.body), [0, 3, 3, 3, 0, 0, 0]);
  },
});

Deno.test({
  name:
    "h3 client runs 200 concurrent requests on one connection and matches each response to its request",
  ignore,
  fn: async () => {
    let connections = 0;
    const server = await createNativeH3Server(createHandler(), { tls: serverTls() });
    try {
      const client = await createNativeH3Client(server.url, { tls: trust(), timeoutMs: 20000 });
      try {
        const sizes = Array.from({ length: 200 }, (_, i) => 1 + ((i * 7919) % 40000));
        const results = await Promise.all(
          sizes.map((size) => client.request({ path: `/nbench/v1/payload?size=${size}` })),
        );
        results.forEach((r, i) => assert.equal(r.body.length, sizes[i]));
        connections = (server as unknown as { connectionCount: number }).connectionCount;
      } finally {
        await client.close();
      }
    } finally {
      await server.close();
    }
    assert.equal(connections, 1);
  },
});

Deno.test({
  name:
    "h3 client rejects with TimeoutError when the handler is slower than the timeout, then keeps working",
  ignore,
  fn: async () => {
    const release = Promise.withResolvers<void>();
    const handler: SbiHandler = async (req) => {
      if (req.path === "/slow") await release.promise;
      return { status: 200, headers: {}, body: new TextEncoder().encode(req.path) };
    };
    await withServer(async (url) => {
      const client = await createNativeH3Client(url, { tls: trust() });
      try {
        await assert.rejects(client.request({ path: "/slow", timeoutMs: 150 }), TimeoutError);
        const ok = await client.request({ path: "/fast" });
        assert.equal(new TextDecoder().decode(ok.body), "/fast");
      } finally {
        release.resolve();
        await client.close();
      }
    }, handler);
  },
});

Deno.test({
  name: "h3 client refuses a server whose certificate comes from an unknown CA",
  ignore,
  fn: async () => {
    const other = await createDevPki({ caName: "someone else" });
    await withServer(async (url) => {
      const client = await createNativeH3Client(url, { tls: { ca: other.caCertPem } });
      try {
        const err = await client.request({ path: "/nbench/v1/payload?size=1" }).then(
          () => assert.fail("request succeeded"),
          (e) => e,
        );
        assert.ok(err instanceof TransportError, String(err));
        assert.match(err.message, /TLS/);
      } finally {
        await client.close();
      }
    });
  },
});

Deno.test({
  name:
    "h3 client refuses a certificate that does not name the host, and skips checks only when insecure",
  ignore,
  fn: async () => {
    await withServer(async (url) => {
      const wrong = await createNativeH3Client(url, {
        tls: { ca: pki.caCertPem, serverName: "nrf.example.org" },
      });
      try {
        await assert.rejects(wrong.request({ path: "/nbench/v1/payload?size=1" }), (e: Error) => {
          assert.ok(e instanceof TransportError);
          assert.match(e.message, /TLS/);
          return true;
        });
      } finally {
        await wrong.close();
      }
      const insecure = await createNativeH3Client(url, {
        tls: { insecure: true, serverName: "nrf.example.org" },
      });
      try {
        const res = await insecure.request({ path: "/nbench/v1/payload?size=9" });
        assert.equal(res.body.length, 9);
      } finally {
        await insecure.close();
      }
      const byName = await createNativeH3Client(url.replace("127.0.0.1", "localhost"), {
        tls: trust(),
      });
      try {
        assert.equal((await byName.request({ path: "/nbench/v1/payload?size=2" })).body.length, 2);
      } finally {
        await byName.close();
      }
    });
  },
});

Deno.test({
  name:
    "h3 server with requireClientCert refuses a client without a certificate and serves one with it",
  ignore,
  fn: async () => {
    const tls = { ...serverTls(), ca: pki.caCertPem, requireClientCert: true };
    await withServer(
      async (url) => {
        const anonymous = await createNativeH3Client(url, { tls: trust() });
        try {
          await assert.rejects(
            anonymous.request({ path: "/nbench/v1/payload?size=1" }),
            TransportError,
          );
        } finally {
          await anonymous.close();
        }
        const mutual = await createNativeH3Client(url, {
          tls: { ca: pki.caCertPem, cert: pki.clientCertPem, key: pki.clientKeyPem },
        });
        try {
          assert.equal(
            (await mutual.request({ path: "/nbench/v1/payload?size=5" })).body.length,
            5,
          );
        } finally {
          await mutual.close();
        }
      },
      createHandler(),
      tls,
    );
  },
});

Deno.test({
  name:
    "h3 client reports a UDP port where nothing listens as TransportError (ICMP port unreachable), not a timeout",
  ignore,
  fn: async () => {
    // Nothing listens at 127.0.0.2:port. The placeholder holds the port on 127.0.0.1 so the
    // client's own socket cannot be given it (it would then talk to itself).
    const placeholder = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    const port = (placeholder.addr as Deno.NetAddr).port;
    // The request timeout (3 s) is shorter than the handshake timeout (5 s): without the
    // ICMP error this request ends in TimeoutError.
    const client = await createNativeH3Client(`https://127.0.0.2:${port}`, {
      tls: trust(),
      timeoutMs: 3000,
    });
    try {
      const err = await client.request({ path: "/nbench/v1/payload?size=1" }).then(
        () => assert.fail("the request succeeded"),
        (e) => e,
      );
      assert.ok(err instanceof TransportError, `${err.name}: ${err.message}`);
      assert.match(err.message, /unreachable.*refused/i);
    } finally {
      await client.close();
      placeholder.close();
    }
  },
});

Deno.test({
  name: "h3 client reports a server restart as TransportError and reconnects on the next request",
  ignore,
  fn: async () => {
    const first = await createNativeH3Server(createHandler(), { tls: serverTls() });
    const port = first.port;
    const client = await createNativeH3Client(first.url, { tls: trust(), timeoutMs: 3000 });
    try {
      assert.equal((await client.request({ path: "/nbench/v1/payload?size=3" })).body.length, 3);
      await first.close();
      // The server closed the connection with CONNECTION_CLOSE; a request on it fails or reconnects.
      const second = await createNativeH3Server(createHandler(), { tls: serverTls(), port });
      try {
        let res;
        try {
          res = await client.request({ path: "/nbench/v1/payload?size=4" });
        } catch (err) {
          assert.ok(err instanceof TransportError, String(err));
          res = await client.request({ path: "/nbench/v1/payload?size=4" });
        }
        assert.equal(res.body.length, 4);
      } finally {
        await second.close();
      }
    } finally {
      await client.close();
    }
  },
});

Deno.test({
  name: "h3 connection closes after the idle timeout and the client reconnects transparently",
  ignore,
  fn: async () => {
    const server = await createNativeH3Server(createHandler(), {
      tls: serverTls(),
      idleTimeoutMs: 300,
    });
    const client = await createNativeH3Client(server.url, { tls: trust(), idleTimeoutMs: 300 });
    try {
      assert.equal((await client.request({ path: "/nbench/v1/payload?size=3" })).body.length, 3);
      const count = () => (server as unknown as { connectionCount: number }).connectionCount;
      assert.equal(count(), 1);
      // The server reports no event when a connection ends: its count is watched.
      await until(() => count() === 0, "the server to drop the idle connection", 3000);
      assert.equal((await client.request({ path: "/nbench/v1/payload?size=6" })).body.length, 6);
      assert.equal(count(), 1);
    } finally {
      await client.close();
      await server.close();
    }
  },
});

Deno.test({
  name: "h3 client is closed idempotently and refuses requests afterwards",
  ignore,
  fn: async () => {
    await withServer(async (url) => {
      const client = await createNativeH3Client(url, { tls: trust() });
      await client.request({ path: "/nbench/v1/payload?size=1" });
      await client.close();
      await client.close();
      await assert.rejects(client.request({ path: "/nbench/v1/payload?size=1" }), TransportError);
    });
  },
});

Deno.test({
  name: "h3 server close lets an in-flight request finish, then refuses new connections",
  ignore,
  fn: async () => {
    const started = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const handler: SbiHandler = async (req) => {
      if (req.path === "/slow") {
        started.resolve();
        await release.promise;
      }
      return { status: 200, headers: {}, body: new TextEncoder().encode(`done ${req.path}`) };
    };
    const server = await createNativeH3Server(handler, { tls: serverTls() });
    const client = await createNativeH3Client(server.url, { tls: trust(), timeoutMs: 3000 });
    try {
      const slow = client.request({ path: "/slow" });
      await started.promise;
      const closing = server.close();
      release.resolve(); // the handler finishes only once the server is closing
      const res = await slow;
      assert.equal(new TextDecoder().decode(res.body), "done /slow");
      await closing;
      const late = await createNativeH3Client(server.url, { tls: trust(), timeoutMs: 400 });
      try {
        await assert.rejects(
          late.request({ path: "/x" }),
          (e: Error) => e instanceof TimeoutError || e instanceof TransportError,
        );
      } finally {
        await late.close();
      }
    } finally {
      await client.close();
      await server.close();
    }
  },
});

for (const cc of ["host", "reno", "cubic", "bbr", "bbr2"] as const) {
  Deno.test({
    name: `h3 client and server move a 4 MiB echo both ways under the ${cc} congestion controller`,
    ignore,
    fn: async () => {
      const server = await createNativeH3Server(createHandler(), {
        tls: serverTls(),
        congestionControl: cc,
      });
      const client = await createNativeH3Client(server.url, {
        tls: trust(),
        timeoutMs: 20000,
        congestionControl: cc,
      });
      try {
        const body = pattern(4 * 1024 * 1024);
        const res = await client.request({ method: "POST", path: "/nbench/v1/echo", body });
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, body);
      } finally {
        await client.close();
        await server.close();
      }
    },
  });
}

Deno.test({
  name: "h3 client rejects an unknown congestion controller with a TypeError",
  ignore,
  fn: async () => {
    const client = await createNativeH3Client("https://127.0.0.1:9", {
      tls: trust(),
      // deno-lint-ignore no-explicit-any
      congestionControl: "vegas" as any,
    });
    try {
      await assert.rejects(client.request({ path: "/nbench/v1/payload?size=1" }), (err: Error) => {
        const root = (err.cause as Error | undefined) ?? err;
        return root instanceof TypeError &&
          /Unknown congestion controller "vegas"/.test(root.message);
      });
    } finally {
      await client.close();
    }
  },
});
