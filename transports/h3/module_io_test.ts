import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import { createDevPki, type DevPki } from "../pki.ts";
import { createNativeH3Client, createNativeH3Server } from "./mod.ts";
import type { NativeIo } from "../native/io_loop.ts";
import { H3_SKIP } from "./_test_util.ts";

const ignore = H3_SKIP !== null;
const pki: DevPki = ignore ? ({} as DevPki) : await createDevPki();

function server(io: NativeIo) {
  return createNativeH3Server(createHandler(), {
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    io,
  });
}

const PATHS = [
  "/nbench/v1/payload?size=0",
  "/nbench/v1/payload?size=256",
  "/nbench/v1/payload?size=16384",
  "/nbench/v1/payload?size=300000",
  "/nnrf-nfm/v1/nf-instances/none",
];

Deno.test({
  name: "h3 server on the module's own I/O thread answers byte for byte as on Deno's sockets",
  ignore,
  fn: async () => {
    const answers = new Map<NativeIo, string[]>();
    for (const io of ["runtime", "module"] as const) {
      const s = await server(io);
      const c = await createNativeH3Client(s.url, { tls: { ca: pki.caCertPem }, io: "runtime" });
      try {
        assert.equal(s.io, io);
        const got: string[] = [];
        for (const path of PATHS) {
          const r = await c.request({ path });
          const body = Array.from(r.body.subarray(0, 64)).join(",");
          got.push(`${r.status} ${r.body.length} ${r.headers["content-type"]} ${body}`);
        }
        answers.set(io, got);
      } finally {
        await c.close();
        await s.close();
      }
    }
    assert.deepEqual(answers.get("module"), answers.get("runtime"));
    assert.match(answers.get("module")![3], /^200 300000 /);
  },
});

/** Datagrams the server received after the handshake without an ECN mark it read, over `n` requests. */
async function unmarkedAfterHandshake(io: NativeIo, n: number): Promise<number> {
  const s = await server(io);
  const c = await createNativeH3Client(s.url, { tls: { ca: pki.caCertPem }, io: "runtime" });
  try {
    const path = "/nbench/v1/payload?size=256";
    assert.equal((await c.request({ path })).status, 200);
    const gap = () => s.datagramStats()!.datagramsReceived - s.datagramStats()!.ecnReceived;
    const start = gap();
    for (let i = 0; i < n; i++) assert.equal((await c.request({ path })).status, 200);
    return gap() - start;
  } finally {
    await c.close();
    await s.close();
  }
}

Deno.test({
  name:
    "h3 server's own I/O thread reads every datagram's ECN mark, where Deno's receive hides the first of each wake-up",
  ignore,
  fn: async () => {
    const N = 100;
    // A client may send a packet or two unmarked while QUIC validates ECN on the path (RFC 9000
    // §13.4.2); Deno's receive hides one mark per wake-up.
    const module = await unmarkedAfterHandshake("module", N);
    assert.ok(module <= 2, `${module} unmarked datagrams read by the module's thread`);
    const runtime = await unmarkedAfterHandshake("runtime", N);
    assert.ok(runtime >= N / 2, `${runtime} unmarked datagrams through Deno's receive`);
  },
});

Deno.test({
  name:
    "h3 server's own I/O thread wakes JavaScript once per request at most and serves 64 requests in flight",
  ignore,
  fn: async () => {
    const s = await server("module");
    const c = await createNativeH3Client(s.url, { tls: { ca: pki.caCertPem }, io: "runtime" });
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
      // the client's acknowledgements are handled on the thread without JavaScript
      assert.ok(after.readable - before.readable >= calls, JSON.stringify({ before, after }));

      const all = await Promise.all(
        Array.from({ length: 64 }, () => c.request({ path: "/nbench/v1/payload?size=1000" })),
      );
      assert.deepEqual(
        new Set(all.map((r) => `${r.status} ${r.body.length}`)),
        new Set(["200 1000"]),
      );
    } finally {
      await c.close();
      await s.close();
    }
  },
});

Deno.test({
  name: "h3 server's own I/O thread stops at close with a request still unanswered",
  ignore,
  fn: async () => {
    let release = () => {};
    const held = new Promise<void>((r) => release = r);
    const inner = createHandler();
    const s = await createNativeH3Server(async (req) => {
      if (req.path === "/hold") await held;
      return inner(req);
    }, { tls: { cert: pki.serverCertPem, key: pki.serverKeyPem }, io: "module" });
    const c = await createNativeH3Client(s.url, { tls: { ca: pki.caCertPem }, io: "runtime" });
    const pending = c.request({ path: "/hold", timeoutMs: 5000 }).catch((e) => e);
    await new Promise((r) => setTimeout(r, 50));
    const closing = s.close();
    release();
    await closing;
    const r = await pending;
    assert.ok(r instanceof Error || r.status === 404, String(r));
    await c.close();
    // the thread is gone and the socket closed: its port binds again, its counters still read
    assert.ok(s.ioStats()!.calls >= 1);
    const again = await createNativeH3Server(inner, {
      tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
      io: "module",
      port: s.port,
    });
    await again.close();
  },
});

Deno.test({
  name:
    "h3 client on the module's own I/O thread: same answers from either server, every mark read, 64 in flight, more requests than stream credit",
  ignore,
  fn: async () => {
    for (const serverIo of ["runtime", "module"] as const) {
      const s = await server(serverIo);
      const c = await createNativeH3Client(s.url, { tls: { ca: pki.caCertPem }, io: "module" });
      try {
        const got: string[] = [];
        for (const path of PATHS) {
          const r = await c.request({ path });
          got.push(`${r.status} ${r.body.length} ${Array.from(r.body.subarray(0, 64)).join(",")}`);
        }
        assert.match(got[3], /^200 300000 /);
        assert.match(got[4], /^404 /);
        const d0 = c.datagramStats()!;
        // more requests at once than the server's stream credit (100): queued ones wait for credit
        const all = await Promise.all(
          Array.from({ length: 300 }, () => c.request({ path: "/nbench/v1/payload?size=100" })),
        );
        assert.deepEqual(
          new Set(all.map((r) => `${r.status} ${r.body.length}`)),
          new Set(["200 100"]),
        );
        const d = c.datagramStats()!;
        assert.ok(d.datagramsReceived - d0.datagramsReceived >= 10);
        assert.equal(
          d.datagramsReceived - d.ecnReceived,
          d0.datagramsReceived - d0.ecnReceived,
          `${serverIo} server: datagrams after the first requests arrived unmarked or unread`,
        );
      } finally {
        await c.close();
        await s.close();
      }
    }
  },
});

Deno.test({
  name:
    "h3 client on the module's own I/O thread fails fast when nothing listens, and closes while a request waits",
  ignore,
  fn: async () => {
    const s = await server("runtime");
    const port = s.port;
    await s.close();
    const c = await createNativeH3Client(`https://127.0.0.1:${port}`, {
      tls: { ca: pki.caCertPem },
      io: "module",
    });
    const t0 = performance.now();
    const err = await c.request({ path: "/nbench/v1/payload?size=1", timeoutMs: 3000 }).catch((e) =>
      e
    );
    assert.ok(err instanceof Error, String(err));
    assert.ok(performance.now() - t0 < 2500, `failed after ${performance.now() - t0} ms`);
    await c.close();

    let release = () => {};
    const held = new Promise<void>((r) => release = r);
    const inner = createHandler();
    const slow = await createNativeH3Server(async (req) => {
      if (req.path === "/hold") await held;
      return inner(req);
    }, { tls: { cert: pki.serverCertPem, key: pki.serverKeyPem } });
    const c2 = await createNativeH3Client(slow.url, { tls: { ca: pki.caCertPem }, io: "module" });
    assert.equal((await c2.request({ path: "/nbench/v1/payload?size=1" })).status, 200);
    const pending = c2.request({ path: "/hold", timeoutMs: 5000 }).catch((e) => e);
    await new Promise((r) => setTimeout(r, 30));
    await c2.close();
    assert.ok((await pending) instanceof Error);
    release();
    await slow.close();
  },
});
