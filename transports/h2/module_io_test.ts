import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import type { SbiHandler } from "../../handler/types.ts";
import { createNativeH2Client } from "./client.ts";
import { createNativeH2cServer, createNativeH2TlsServer } from "./server.ts";
import type { NativeIo } from "../native/io_loop.ts";
import {
  FLAG,
  FRAME,
  frame,
  H2_CODE,
  H2_NATIVE_SKIP,
  RawH2Client,
  requestBlock,
  streamEnded,
} from "./_test_util.ts";
import { runLab, startLabServe, until } from "../../tests/support.ts";
import { createDevPki } from "../pki.ts";
import type { SbiClient } from "../types.ts";

const ignore = H2_NATIVE_SKIP !== null;

const PATHS = [
  "/nbench/v1/payload?size=0",
  "/nbench/v1/payload?size=256",
  "/nbench/v1/payload?size=16384",
  "/nbench/v1/payload?size=300000",
  "/nnrf-nfm/v1/nf-instances/none",
];

/** Status, headers (but the date) and body of the answer to each of {@linkcode PATHS}. */
async function askAll(c: SbiClient): Promise<{ head: string; body: Uint8Array }[]> {
  const got = [];
  for (const path of PATHS) {
    const r = await c.request({ path });
    const headers = Object.entries(r.headers).filter(([k]) => k !== "date").sort();
    got.push({ head: `${r.status} ${JSON.stringify(headers)}`, body: r.body });
  }
  return got;
}

function server(io: NativeIo, handler: SbiHandler = createHandler()) {
  return createNativeH2cServer(handler, { io });
}

Deno.test({
  name: "h2c server on the module's own I/O thread answers byte for byte as on Deno's sockets",
  ignore,
  fn: async () => {
    const answers = new Map<NativeIo, { head: string; body: Uint8Array }[]>();
    for (const io of ["runtime", "module"] as const) {
      const s = await server(io);
      const c = await createNativeH2Client(s.url, { timeoutMs: 5000 });
      try {
        assert.equal(s.io, io);
        answers.set(io, await askAll(c));
      } finally {
        await c.close();
        await s.close();
      }
    }
    assert.deepEqual(answers.get("module"), answers.get("runtime"));
    const module = answers.get("module")!;
    assert.match(module[3].head, /^200 /);
    assert.equal(module[3].body.length, 300000);
    assert.match(module[4].head, /^404 /);
  },
});

Deno.test({
  name:
    "h2c server's own I/O thread serves 64 requests in flight on one connection and on four at once",
  ignore,
  fn: async () => {
    const s = await server("module");
    const clients = await Promise.all(
      Array.from({ length: 4 }, () => createNativeH2Client(s.url, { timeoutMs: 10_000 })),
    );
    try {
      const sizes = (n: number) => Array.from({ length: n }, (_, i) => 100 + 97 * i);
      const one = await Promise.all(
        sizes(64).map((n) => clients[0].request({ path: `/nbench/v1/payload?size=${n}` })),
      );
      assert.deepEqual(
        one.map((r) => `${r.status} ${r.body.length}`),
        sizes(64).map((n) => `200 ${n}`),
      );
      const all = await Promise.all(
        clients.flatMap((c) =>
          sizes(16).map((n) => c.request({ path: `/nbench/v1/payload?size=${n * 40}` }))
        ),
      );
      assert.deepEqual(
        all.map((r) => `${r.status} ${r.body.length}`),
        clients.flatMap(() => sizes(16).map((n) => `200 ${n * 40}`)),
      );
      assert.equal(s.connectionCount, 4);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await s.close();
    }
  },
});

Deno.test({
  name: "h2c server's own I/O thread wakes JavaScript at most once per request at one in flight",
  ignore,
  fn: async () => {
    const s = await server("module");
    const c = await createNativeH2Client(s.url, { timeoutMs: 5000 });
    try {
      const path = "/nbench/v1/payload?size=256";
      assert.equal((await c.request({ path })).status, 200);
      const before = s.ioStats()!;
      const N = 200;
      for (let i = 0; i < N; i++) assert.equal((await c.request({ path })).body.length, 256);
      const after = s.ioStats()!;
      const calls = after.calls - before.calls;
      assert.ok(
        calls >= N / 2 && calls <= N + 2,
        `${calls} wake-ups of JavaScript for ${N} requests`,
      );
      assert.ok(after.readable - before.readable >= calls, JSON.stringify({ before, after }));
    } finally {
      await c.close();
      await s.close();
    }
  },
});

Deno.test({
  name:
    "h2c server's own I/O thread stops at close with a request still unanswered and frees its port",
  ignore,
  fn: async () => {
    let release = () => {};
    const held = new Promise<void>((r) => release = r);
    const inner = createHandler();
    const entered = Promise.withResolvers<void>();
    const s = await server("module", async (req) => {
      if (req.path === "/hold") {
        entered.resolve();
        await held;
      }
      return inner(req);
    });
    const c = await createNativeH2Client(s.url, { timeoutMs: 5000 });
    const pending = c.request({ path: "/hold" }).catch((e) => e);
    await entered.promise;
    const closing = s.close();
    release();
    await closing;
    const r = await pending;
    assert.ok(r instanceof Error || r.status === 404, String(r));
    await c.close();
    assert.equal(s.connectionCount, 0);
    assert.ok(s.ioStats()!.calls >= 1);
    // the thread is gone and the socket closed: its port binds again
    const again = await createNativeH2cServer(inner, { io: "module", port: s.port });
    await again.close();
  },
});

Deno.test({
  name: "h2c server's own I/O thread closes a client that sends junk and keeps serving another",
  ignore,
  fn: async () => {
    const s = await server("module");
    const c = await createNativeH2Client(s.url, { timeoutMs: 5000 });
    try {
      const path = "/nbench/v1/payload?size=256";
      assert.equal((await c.request({ path })).status, 200);
      const junk = await RawH2Client.open(s.port, { preface: false });
      await junk.write(new TextEncoder().encode("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
      await junk.closed();
      assert.equal(junk.frames[0]?.type, FRAME.SETTINGS);
      await junk.close();
      const noise = await RawH2Client.open(s.port);
      await noise.write(crypto.getRandomValues(new Uint8Array(8192)));
      await noise.closed();
      await noise.close();
      await until(() => s.connectionCount === 1, "the junk connections to close");
      assert.equal((await c.request({ path })).body.length, 256);
    } finally {
      await c.close();
      await s.close();
    }
  },
});

Deno.test({
  name:
    "h2c server's own I/O thread closes a connection idle after its answer by the idle timeout (GOAWAY NO_ERROR)",
  ignore,
  fn: async () => {
    const s = await createNativeH2cServer(createHandler(), { io: "module", idleTimeoutMs: 300 });
    try {
      const raw = await RawH2Client.open(s.port);
      const block = new Uint8Array(requestBlock("/nbench/v1/payload?size=0"));
      await raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, block));
      await raw.until(() => streamEnded(raw, 1));
      const answered = performance.now();
      await raw.closed(5000);
      const idle = performance.now() - answered;
      assert.equal(raw.goawayCode, H2_CODE.NO_ERROR);
      assert.ok(idle >= 250 && idle < 3000, `closed ${idle.toFixed(0)} ms after the answer`);
      await raw.close();
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name:
    "h2-tls server on the module's own I/O thread answers byte for byte as on Deno's sockets and shows each handshake to onTls",
  ignore,
  fn: async () => {
    const pki = await createDevPki();
    const answers = new Map<NativeIo, { head: string; body: Uint8Array }[]>();
    for (const io of ["runtime", "module"] as const) {
      const seen: string[] = [];
      const s = await createNativeH2TlsServer(createHandler(), {
        tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
        io,
        onTls: (conn) => {
          const info = conn.info();
          const key = conn.exportKeyingMaterial("EXPORTER-test", undefined, 16);
          seen.push(`${conn.remoteAddr.hostname} ${info.version} ${info.alpn} ${key.length}`);
        },
      });
      const c = await createNativeH2Client(s.url, { tls: { ca: pki.caCertPem }, timeoutMs: 5000 });
      try {
        assert.equal(s.io, io);
        answers.set(io, await askAll(c));
        assert.deepEqual(seen, ["127.0.0.1 TLS1.3 h2 16"]);
      } finally {
        await c.close();
        await s.close();
      }
    }
    assert.deepEqual(answers.get("module"), answers.get("runtime"));
    assert.equal(answers.get("module")![3].body.length, 300000);
  },
});

Deno.test({
  name:
    "lab serve --io module serves h2c and h2-tls on the module's thread, and --io of anything else is a usage error",
  ignore,
  fn: async () => {
    const srv = await startLabServe({
      transports: ["h2c", "h2-tls"],
      stack: "native",
      io: "module",
    });
    try {
      for (const url of [srv.urls.h2c!, srv.urls["h2-tls"]!]) {
        const c = await createNativeH2Client(url, { tls: { insecure: true }, timeoutMs: 5000 });
        try {
          const r = await c.request({ path: "/nbench/v1/payload?size=256" });
          assert.equal(r.body.length, 256, url);
        } finally {
          await c.close();
        }
      }
    } finally {
      await srv.stop();
    }
    const bad = await runLab(["serve", "--io", "kernel"]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--io must be "runtime" or "module", not "kernel"/);
  },
});
