import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import type { SbiHandler } from "../../handler/types.ts";
import { createDevPki } from "../pki.ts";
import { TimeoutError, TransportError } from "../types.ts";
import { createDenoH2cServer, createDenoH2TlsServer } from "../deno/server.ts";
import { createNativeH2Client } from "./client.ts";
import { tcpSocketsNoDelay } from "../native/nodelay.ts";
import { FLAG, FRAME, frame, frameRelay, H2_NATIVE_SKIP, rawServer } from "./_test_util.ts";

const ignore = H2_NATIVE_SKIP !== null;
const pki = await createDevPki();
const MiB = 1024 * 1024;

function pattern(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

async function pair(tls: boolean, handler: SbiHandler = createHandler()) {
  const server = tls
    ? await createDenoH2TlsServer(handler, {
      tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    })
    : await createDenoH2cServer(handler, {});
  const client = await createNativeH2Client(server.url, { tls: { ca: pki.caCertPem } });
  return { server, client, close: async () => (await client.close(), await server.close()) };
}

for (const tls of [false, true]) {
  const name = tls ? "h2-tls" : "h2c";
  Deno.test({
    name: `native ${name} client moves exact bytes both ways from 0 B to 16 MiB`,
    ignore,
    fn: async () => {
      const p = await pair(tls);
      try {
        for (const size of [0, 1, 255, 256, 16384, 16385, MiB, 16 * MiB]) {
          const body = pattern(size, size);
          const r = await p.client.request({
            method: "POST",
            path: "/nbench/v1/echo",
            body,
            headers: { "content-type": "application/octet-stream" },
            timeoutMs: 30_000,
          });
          assert.equal(r.status, 200, `POST ${size}`);
          assert.equal(r.body.length, size);
          assert.deepEqual(r.body, body, `echo of ${size} bytes differs`);
          if (size > 0) {
            const g = await p.client.request({
              path: `/nbench/v1/payload?size=${size}`,
              timeoutMs: 30_000,
            });
            assert.equal(g.status, 200);
            assert.equal(g.headers["content-length"], String(size));
            assert.equal(g.body.length, size, `GET ${size}`);
          }
        }
      } finally {
        await p.close();
      }
    },
  });
}

Deno.test({
  name: "native h2c client sends every method and gets the handler's statuses",
  ignore,
  fn: async () => {
    const p = await pair(false);
    try {
      const nf = {
        nfInstanceId: "3fa85f64-5717-4562-b3fc-2c963f66afa6",
        nfType: "AMF",
        nfStatus: "REGISTERED",
      };
      const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
      const path = "/nnrf-nfm/v1/nf-instances/3fa85f64-5717-4562-b3fc-2c963f66afa6";
      const json = { "content-type": "application/json" };
      assert.equal(
        (await p.client.request({ method: "PUT", path, body: enc(nf), headers: json })).status,
        201,
      );
      assert.equal(
        (await p.client.request({ method: "PUT", path, body: enc(nf), headers: json })).status,
        200,
      );
      const patch = await p.client.request({
        method: "PATCH",
        path,
        body: enc([{ op: "replace", path: "/nfStatus", value: "SUSPENDED" }]),
        headers: { "content-type": "application/json-patch+json" },
      });
      assert.equal(patch.status, 200);
      const got = await p.client.request({ path });
      assert.equal(JSON.parse(new TextDecoder().decode(got.body)).nfStatus, "SUSPENDED");
      assert.equal((await p.client.request({ method: "DELETE", path })).status, 204);
      const gone = await p.client.request({ path });
      assert.equal(gone.status, 404);
      assert.equal(gone.headers["content-type"], "application/problem+json");
      const wrong = await p.client.request({ method: "POST", path: "/nbench/v1/payload?size=1" });
      assert.equal(wrong.status, 405);
      assert.ok(wrong.headers["allow"]);
    } finally {
      await p.close();
    }
  },
});

Deno.test({
  name: "native h2c client carries 200 concurrent requests on one connection",
  ignore,
  fn: async () => {
    const p = await pair(false);
    try {
      const rs = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          p.client.request({
            method: "POST",
            path: "/nbench/v1/echo",
            body: pattern(i * 97 + 1, i),
            headers: { "content-type": "application/octet-stream" },
          })),
      );
      rs.forEach((r, i) => assert.deepEqual(r.body, pattern(i * 97 + 1, i), `request ${i}`));
      assert.equal(tcpSocketsNoDelay({ remotePort: p.server.port }).length, 1);
    } finally {
      await p.close();
    }
  },
});

Deno.test({
  name: "native h2c client sends the SBI headers and sets TCP_NODELAY",
  ignore,
  fn: async () => {
    let seen: Record<string, string> = {};
    const inner = createHandler();
    const p = await pair(false, (req) => {
      seen = req.headers;
      return inner(req);
    });
    try {
      await p.client.request({
        path: "/nbench/v1/payload?size=1",
        timeoutMs: 1234,
        headers: { "X-Custom": "yes", Connection: "close" },
      });
      assert.match(seen["traceparent"], /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      assert.equal(seen["3gpp-sbi-max-rsp-time"], "1234");
      assert.match(seen["3gpp-sbi-sender-timestamp"], /GMT$/);
      assert.match(seen["user-agent"], /^SMF-/);
      assert.equal(seen["x-custom"], "yes");
      assert.equal(seen["connection"], undefined);
      const socks = tcpSocketsNoDelay({ remotePort: p.server.port });
      assert.equal(socks.length, 1);
      assert.equal(socks[0].noDelay, true);
    } finally {
      await p.close();
    }
  },
});

Deno.test({
  name: "native h2c client resets a timed-out stream with RST_STREAM CANCEL and frees it",
  ignore,
  fn: async () => {
    const release = Promise.withResolvers<void>();
    const inner = createHandler();
    const server = await createDenoH2cServer(async (req) => {
      if (req.path === "/stall") await release.promise;
      return inner(req);
    }, {});
    const relay = frameRelay(server.port);
    const client = await createNativeH2Client(`http://127.0.0.1:${relay.port}`);
    try {
      await client.request({ path: "/nbench/v1/payload?size=1" });
      const t0 = performance.now();
      await assert.rejects(client.request({ path: "/stall", timeoutMs: 200 }), TimeoutError);
      const elapsed = performance.now() - t0;
      assert.ok(elapsed >= 199 && elapsed <= 300, `elapsed ${elapsed.toFixed(1)} ms`);
      for (let i = 0; i < 50 && !relay.frames.some((f) => f.type === FRAME.RST_STREAM); i++) {
        await relay.changed();
      }
      const rst = relay.frames.find((f) => f.type === FRAME.RST_STREAM);
      assert.ok(rst, `no RST_STREAM among ${JSON.stringify(relay.frames)}`);
      assert.equal(rst.errorCode, 0x8);
      assert.equal(rst.streamId, 3, "the second stream (id 3) is the one reset");
      const after = await client.request({ path: "/nbench/v1/payload?size=7" });
      assert.equal(after.body.length, 7);
      assert.equal((client as unknown as { openStreams: number }).openStreams, 0);
    } finally {
      release.resolve();
      await client.close();
      await relay.close();
      await server.close();
    }
  },
});

Deno.test({
  name: "native h2c client reconnects after the server restarts on the same port",
  ignore,
  fn: async () => {
    const first = await createDenoH2cServer(createHandler(), {});
    const port = first.port;
    const client = await createNativeH2Client(first.url);
    let second;
    try {
      assert.equal((await client.request({ path: "/nbench/v1/payload?size=3" })).status, 200);
      await first.close();
      second = await createDenoH2cServer(createHandler(), { port });
      let failures = 0;
      let status = 0;
      for (let i = 0; i < 3 && status === 0; i++) {
        try {
          status = (await client.request({ path: "/nbench/v1/payload?size=3" })).status;
        } catch (err) {
          assert.ok(err instanceof TransportError, String(err));
          failures++;
        }
      }
      assert.equal(status, 200);
      assert.ok(failures <= 1, `${failures} requests failed after the restart`);
    } finally {
      await client.close();
      await second?.close();
    }
  },
});

const garbage: [string, (c: Deno.TcpConn) => Promise<void>][] = [
  ["an HTTP/1.1 answer", async (c) => {
    await c.read(new Uint8Array(1024));
    await c.write(
      new TextEncoder().encode("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
    );
    await c.read(new Uint8Array(1024));
  }],
  ["random bytes", async (c) => {
    await c.write(crypto.getRandomValues(new Uint8Array(4096)));
    await c.read(new Uint8Array(1024));
  }],
  ["a SETTINGS frame then a broken HEADERS frame", async (c) => {
    await c.write(new Uint8Array([0, 0, 0, 4, 0, 0, 0, 0, 0]));
    await c.read(new Uint8Array(1024));
    await c.write(new Uint8Array([0, 0, 1, 1, 0x5, 0, 0, 0, 1, 0xff])); // HEADERS with a broken block
    await c.read(new Uint8Array(1024));
  }],
  ["nothing, then close", async (c) => {
    await c.read(new Uint8Array(1024));
    c.close();
  }],
  // frames that break RFC 9113 once the request is in: each is a connection error
  ["PRIORITY on stream 0 (RFC 9113 §6.3)", violation(priority(0, 1))],
  ["PRIORITY on the request's stream that depends on itself (§5.3.1)", violation(priority(1, 1))],
  [
    "HEADERS on an even stream it never promised (§5.1.1)",
    violation(
      frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 2, new Uint8Array([0x88])),
    ),
  ],
  [
    "WINDOW_UPDATE of 0 on the connection (§6.9)",
    violation(frame(FRAME.WINDOW_UPDATE, 0, 0, new Uint8Array(4))),
  ],
];

/** A PRIORITY frame: `stream` depends on `dependsOn`. */
function priority(stream: number, dependsOn: number): Uint8Array {
  const p = new Uint8Array(5);
  new DataView(p.buffer).setUint32(0, dependsOn);
  p[4] = 15;
  return frame(FRAME.PRIORITY, 0, stream, p);
}

/**
 * A server that sends SETTINGS, waits until the client's request (a HEADERS
 * frame) is in, answers with `bad`, then reads until the client goes away.
 */
function violation(bad: Uint8Array): (c: Deno.TcpConn) => Promise<void> {
  return async (c) => {
    await c.write(frame(FRAME.SETTINGS, 0, 0));
    let seen = new Uint8Array(0);
    const buf = new Uint8Array(65536);
    // bounded by the client: it closes after its request timeout at the latest
    while (!hasHeaders(seen)) {
      const n = await c.read(buf);
      if (n === null) return;
      seen = new Uint8Array([...seen, ...buf.subarray(0, n)]);
    }
    await c.write(frame(FRAME.SETTINGS, FLAG.ACK, 0));
    await c.write(bad);
    while ((await c.read(buf)) !== null);
  };
}

/** True once `bytes` (preface, then frames) hold a complete HEADERS frame. */
function hasHeaders(bytes: Uint8Array): boolean {
  for (let at = 24; at + 9 <= bytes.length;) {
    const len = (bytes[at] << 16) | (bytes[at + 1] << 8) | bytes[at + 2];
    if (at + 9 + len > bytes.length) return false;
    if (bytes[at + 3] === FRAME.HEADERS) return true;
    at += 9 + len;
  }
  return false;
}

for (const [what, serve] of garbage) {
  Deno.test({
    name: `native h2c client fails with TransportError when the server sends ${what}`,
    ignore,
    fn: async () => {
      const srv = rawServer(serve);
      const client = await createNativeH2Client(`http://127.0.0.1:${srv.port}`);
      try {
        await assert.rejects(client.request({ path: "/x", timeoutMs: 3000 }), TransportError);
        await assert.rejects(client.request({ path: "/x", timeoutMs: 3000 }), TransportError);
      } finally {
        await client.close();
        await srv.close();
      }
    },
  });
}

Deno.test({
  name: "native h2-tls client refuses a server that does not negotiate h2",
  ignore,
  fn: async () => {
    const listener = Deno.listenTls({
      hostname: "127.0.0.1",
      port: 0,
      cert: pki.serverCertPem,
      key: pki.serverKeyPem,
      alpnProtocols: ["http/1.1"],
    });
    const accepting = (async () => {
      for await (const c of listener) {
        await c.handshake().catch(() => {});
        c.close();
      }
    })().catch(() => {});
    const port = (listener.addr as Deno.NetAddr).port;
    const client = await createNativeH2Client(`https://127.0.0.1:${port}`, {
      tls: { ca: pki.caCertPem },
    });
    try {
      await assert.rejects(client.request({ path: "/x", timeoutMs: 3000 }), (err: Error) => {
        assert.ok(err instanceof TransportError, String(err));
        assert.match(err.message, /did not negotiate HTTP\/2|h2/);
        return true;
      });
    } finally {
      await client.close();
      listener.close();
      await accepting;
    }
  },
});

Deno.test({
  name: "native h2c client rejects a path without a leading slash and requests after close",
  ignore,
  fn: async () => {
    const p = await pair(false);
    try {
      await assert.rejects(p.client.request({ path: "nope" }), TypeError);
      await assert.rejects(
        p.client.request({ path: "/x", headers: { "x-bad": "a\r\nb" } }),
        TypeError,
      );
      assert.equal((await p.client.request({ path: "/nbench/v1/payload?size=2" })).status, 200);
    } finally {
      await p.close();
    }
    await assert.rejects(p.client.request({ path: "/x" }), TransportError);
    await p.client.close(); // idempotent
  },
});
