/**
 * The native h2c server under misbehaving clients: each case runs while a
 * normal client keeps getting correct answers, and checks what the server
 * told the misbehaving one (GOAWAY code, resets) and that it let go of it.
 */
import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import type { SbiHandler, SbiRequest } from "../../handler/types.ts";
import type { SbiClient } from "../types.ts";
import { createNativeH2Client } from "./client.ts";
import { createDenoH2cServer } from "../deno/server.ts";
import {
  createNativeH2cServer,
  type NativeH2Server,
  type NativeH2ServerOptions,
} from "./server.ts";
import { H2_STAT } from "./server_ffi.ts";
import { until } from "../../tests/support.ts";
import {
  FLAG,
  FRAME,
  frame,
  H2_CODE,
  H2_NATIVE_SKIP,
  hpackLiteral,
  openNonReading,
  RawH2Client,
  requestBlock,
  rstFrame,
  streamBody,
  streamEnded,
} from "./_test_util.ts";

const ignore = H2_NATIVE_SKIP !== null;
const enc = new TextEncoder();
const CONTINUATION = 9;
const SETTINGS_INITIAL_WINDOW_SIZE = 4;
const MiB = 1024 * 1024;

interface Setup {
  server: NativeH2Server;
  client: SbiClient;
  calls: () => number;
  close(): Promise<void>;
}

async function start(
  options: NativeH2ServerOptions = {},
  handler: SbiHandler = createHandler(),
): Promise<Setup> {
  let calls = 0;
  const counted = (req: SbiRequest) => {
    calls++;
    return handler(req);
  };
  const server = await createNativeH2cServer(counted, options);
  const client = await createNativeH2Client(server.url, { timeoutMs: 5000 });
  return {
    server,
    client,
    calls: () => calls,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

const EXPECTED_256 = (await createHandler()({
  method: "GET",
  path: "/nbench/v1/payload",
  query: new URLSearchParams("size=256"),
  headers: {},
  body: new Uint8Array(0),
})).body;

/** The normal client still gets the handler's exact bytes. */
async function assertServes(client: SbiClient): Promise<void> {
  const r = await client.request({ path: "/nbench/v1/payload?size=256" });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, EXPECTED_256);
}

/** The handler's answer to GET /nbench/v1/payload?size=`size`. */
async function payload(size: number): Promise<Uint8Array> {
  return (await createHandler()({
    method: "GET",
    path: "/nbench/v1/payload",
    query: new URLSearchParams(`size=${size}`),
    headers: {},
    body: new Uint8Array(0),
  })).body;
}

/** Index of the first byte where `a` and `b` differ, or -1 when they are equal. */
function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

function headersFrame(id: number, block: number[], flags = FLAG.END_HEADERS | FLAG.END_STREAM) {
  return frame(FRAME.HEADERS, flags, id, new Uint8Array(block));
}

Deno.test({
  name: "native h2c server closes clients that send junk and keeps serving a normal client",
  ignore,
  fn: async () => {
    const s = await start();
    try {
      await assertServes(s.client);
      // not HTTP/2 at all: closed after the server preface, without a GOAWAY
      const http1 = await RawH2Client.open(s.server.port, { preface: false });
      await http1.write(enc.encode("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
      await http1.closed();
      assert.equal(http1.frames[0]?.type, FRAME.SETTINGS);
      assert.equal(http1.goawayCode, undefined);
      // a valid preface, then DATA on stream 0: GOAWAY PROTOCOL_ERROR
      const bad = await RawH2Client.open(s.server.port);
      await bad.write(frame(FRAME.DATA, 0, 0, new Uint8Array(10)));
      await bad.closed();
      assert.equal(bad.goawayCode, H2_CODE.PROTOCOL_ERROR);
      // random bytes after the preface
      const noise = await RawH2Client.open(s.server.port);
      await noise.write(crypto.getRandomValues(new Uint8Array(8192)));
      await noise.closed();
      await assertServes(s.client);
      assert.equal(s.server.connectionCount, 1, "only the normal client stays connected");
      for (const c of [http1, bad, noise]) await c.close();
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name:
    "native h2c server answers a rapid-reset burst with GOAWAY ENHANCE_YOUR_CALM before the handler sees it",
  ignore,
  fn: async () => {
    const s = await start({ maxResets: 100, resetsPerSecond: 10 });
    try {
      const raw = await RawH2Client.open(s.server.port);
      const block = requestBlock("/nbench/v1/payload?size=256");
      let sent = 0;
      for (let batch = 0; batch < 20 && !raw.closedByServer; batch++) {
        const frames: Uint8Array[] = [];
        for (let i = 0; i < 50; i++, sent++) {
          const id = 1 + 2 * sent;
          frames.push(headersFrame(id, block), rstFrame(id, H2_CODE.CANCEL));
        }
        if (!(await raw.write(concat(frames)))) break;
        await assertServes(s.client);
      }
      await raw.closed();
      assert.equal(raw.goawayCode, H2_CODE.ENHANCE_YOUR_CALM);
      assert.ok(sent > 100, `sent only ${sent} request+reset pairs`);
      // the handler ran for the normal client's requests and at most a few raced ones
      assert.ok(s.calls() < 50, `handler ran ${s.calls()} times`);
      await assertServes(s.client);
      await raw.close();
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "native h2c server ends a CONTINUATION flood with GOAWAY ENHANCE_YOUR_CALM",
  ignore,
  fn: async () => {
    const s = await start({ maxContinuations: 8 });
    try {
      const raw = await RawH2Client.open(s.server.port);
      const frames = [headersFrame(1, requestBlock("/nbench/v1/payload?size=256"), 0)];
      for (let i = 0; i < 1000; i++) {
        frames.push(frame(CONTINUATION, 0, 1, new Uint8Array(hpackLiteral(`x-f${i}`, "a"))));
      }
      await raw.write(concat(frames));
      await raw.closed();
      assert.equal(raw.goawayCode, H2_CODE.ENHANCE_YOUR_CALM);
      assert.equal(s.calls(), 0);
      await assertServes(s.client);
      await raw.close();
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name:
    "native h2c server resets a request whose header list exceeds the limit and keeps the connection",
  ignore,
  fn: async () => {
    const s = await start({ maxHeaderListBytes: 4096 });
    try {
      const raw = await RawH2Client.open(s.server.port);
      const big = requestBlock("/nbench/v1/payload?size=256", "GET", [["x-big", "b".repeat(5000)]]);
      await raw.write(headersFrame(1, big));
      await raw.write(headersFrame(3, requestBlock("/nbench/v1/payload?size=256")));
      await raw.until(() => raw.frames.some((f) => f.type === FRAME.DATA && f.streamId === 3));
      const rst = raw.frames.find((f) => f.type === FRAME.RST_STREAM && f.streamId === 1);
      assert.ok(rst, "stream 1 was not reset");
      assert.equal(new DataView(rst.payload.buffer).getUint32(0), H2_CODE.ENHANCE_YOUR_CALM);
      assert.equal(raw.goawayCode, undefined);
      assert.equal(s.calls(), 1, "only stream 3 reached the handler");
      await raw.close();
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name:
    "native h2c server holds at most maxQueuedBytes for a zero-window client and resets stalled streams (RSS growth < 64 MiB)",
  ignore,
  fn: async () => {
    const s = await start({ maxQueuedBytes: 4 * MiB, stallTimeoutMs: 300 });
    try {
      await assertServes(s.client);
      const rss0 = Deno.memoryUsage().rss;
      const raw = await RawH2Client.open(s.server.port, {
        settings: [[SETTINGS_INITIAL_WINDOW_SIZE, 0]],
      });
      const n = 50;
      const frames = [];
      for (let i = 0; i < n; i++) {
        frames.push(headersFrame(1 + 2 * i, requestBlock(`/nbench/v1/payload?size=${MiB}`)));
      }
      await raw.write(concat(frames));
      const resets = () => raw.frames.filter((f) => f.type === FRAME.RST_STREAM);
      // every stream is reset: beyond the cap at once, the rest when they stall
      await raw.until(() => resets().length === n, 10_000);
      let peakQueued = s.server.stat(H2_STAT.QUEUED_BYTES);
      const codes = resets().map((f) => new DataView(f.payload.buffer).getUint32(0));
      const calm = codes.filter((c) => c === H2_CODE.ENHANCE_YOUR_CALM).length;
      const cancelled = codes.filter((c) => c === H2_CODE.CANCEL).length;
      assert.equal(calm, n - 4, `codes ${codes}`);
      assert.equal(cancelled, 4, `codes ${codes}`);
      peakQueued = Math.max(peakQueued, s.server.stat(H2_STAT.QUEUED_BYTES));
      assert.equal(s.server.stat(H2_STAT.QUEUED_BYTES), 0);
      assert.ok(peakQueued <= 4 * MiB);
      await assertServes(s.client);
      const growth = (Deno.memoryUsage().rss - rss0) / MiB;
      assert.ok(growth < 64, `RSS grew by ${growth.toFixed(1)} MiB`);
      await raw.close();
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name:
    "native h2c server holds at most maxServerQueuedBytes over two zero-window clients and gives a closed one's bytes back",
  ignore,
  fn: async () => {
    const s = await start({
      maxQueuedBytes: 4 * MiB,
      maxServerQueuedBytes: 6 * MiB,
      stallTimeoutMs: 60_000,
    });
    const ask = async (n: number) => {
      const raw = await RawH2Client.open(s.server.port, {
        settings: [[SETTINGS_INITIAL_WINDOW_SIZE, 0]],
      });
      const frames = [];
      for (let i = 0; i < n; i++) {
        frames.push(headersFrame(1 + 2 * i, requestBlock(`/nbench/v1/payload?size=${MiB}`)));
      }
      await raw.write(concat(frames));
      return raw;
    };
    const calm = (raw: RawH2Client) =>
      raw.frames.filter((f) =>
        f.type === FRAME.RST_STREAM &&
        new DataView(f.payload.buffer).getUint32(0) === H2_CODE.ENHANCE_YOUR_CALM
      ).length;
    // the server-wide count, as each open connection reports it
    const total = () => s.server.stat(H2_STAT.QUEUED_TOTAL) / s.server.connectionCount;
    try {
      const a = await ask(10);
      await a.until(() => calm(a) === 6, 10_000); // 4 fit its connection's cap
      assert.equal(total(), 4 * MiB);
      const b = await ask(10);
      await b.until(() => calm(b) === 8, 10_000); // 2 fit what the server has left
      assert.equal(total(), 6 * MiB);
      const open = s.server.connectionCount;
      await a.close();
      await until(
        () => s.server.connectionCount < open,
        "the server to drop the closed connection",
      );
      assert.equal(total(), 2 * MiB, "a closed connection's queued bytes leave the count");
      await assertServes(s.client);
      await b.close();
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name:
    "native h2c server closes 500 idle connections by its settings and idle timeouts while serving a normal client",
  ignore,
  fn: async () => {
    // generous timers: on a loaded machine a preface can wait a few hundred ms to be read
    const s = await start({ handshakeTimeoutMs: 1000, idleTimeoutMs: 1200 });
    try {
      const silent = await Promise.all(
        Array.from({ length: 450 }, () => RawH2Client.open(s.server.port, { preface: false })),
      );
      const quiet = await Promise.all(
        Array.from({ length: 50 }, () => RawH2Client.open(s.server.port)),
      );
      const all = [...silent, ...quiet];
      const started = performance.now();
      // the normal client keeps working (bounded: 100 requests at most)
      for (let i = 0; i < 200 && all.some((c) => !c.closedByServer); i++) {
        await assertServes(s.client);
        await new Promise((r) => setTimeout(r, 20));
      }
      await Promise.all(all.map((c) => c.closed(8000)));
      const took = performance.now() - started;
      assert.ok(took < 6000, `closing took ${took.toFixed(0)} ms`);
      for (const c of silent) assert.equal(c.frames.some((f) => f.type === FRAME.GOAWAY), false);
      for (const c of quiet) assert.equal(c.goawayCode, H2_CODE.NO_ERROR);
      assert.equal(s.server.connectionCount, 1);
      await assertServes(s.client);
      await Promise.all(all.map((c) => c.close()));
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "native h2c server answers a body over its limit with the handler's own 413 bytes",
  ignore,
  fn: async () => {
    const s = await start({ maxBodyBytes: 1000 });
    try {
      const headers = { "content-type": "application/octet-stream" };
      const big = new Uint8Array(5000).fill(7);
      const r = await s.client.request({
        method: "POST",
        path: "/nbench/v1/echo",
        headers,
        body: big,
      });
      const want = await createHandler({ maxBodyBytes: 1000 })({
        method: "POST",
        path: "/nbench/v1/echo",
        query: new URLSearchParams(),
        headers,
        body: big,
      });
      assert.equal(r.status, 413);
      assert.equal(r.headers["content-type"], want.headers["content-type"]);
      assert.deepEqual(r.body, want.body);
      assert.equal(s.calls(), 0, "the handler never saw the oversized request");
      // the Deno.serve stack gives the same bytes at the same limit
      const deno = await createDenoH2cServer(createHandler(), { maxBodyBytes: 1000 });
      const client = await createNativeH2Client(deno.url);
      try {
        const d = await client.request({
          method: "POST",
          path: "/nbench/v1/echo",
          headers,
          body: big,
        });
        assert.equal(d.status, 413);
        assert.deepEqual(d.body, want.body);
      } finally {
        await client.close();
        await deno.close();
      }
      const exact = new Uint8Array(1000).fill(9);
      const ok = await s.client.request({
        method: "POST",
        path: "/nbench/v1/echo",
        headers,
        body: exact,
      });
      assert.equal(ok.status, 200);
      assert.deepEqual(ok.body, exact);
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name:
    "native h2c server closes gracefully: GOAWAY, in-flight requests finish, then no new connections",
  ignore,
  fn: async () => {
    const entered = Promise.withResolvers<void>();
    const inner = createHandler({ delayMs: 200 });
    const s = await start({}, (req) => {
      entered.resolve();
      return inner(req);
    });
    const watcher = await RawH2Client.open(s.server.port);
    await watcher.until(() => watcher.frames.length > 0);
    const pending = s.client.request({ path: "/nbench/v1/payload?size=256" });
    await entered.promise;
    const closing = s.server.close();
    const r = await pending;
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, EXPECTED_256);
    await closing;
    await watcher.closed();
    assert.equal(watcher.goawayCode, H2_CODE.NO_ERROR);
    await assert.rejects(Deno.connect({ hostname: "127.0.0.1", port: s.server.port }));
    await watcher.close();
    await s.client.close();
  },
});

Deno.test({
  name:
    "native h2c server at maxConnections closes the idlest connection (GOAWAY) to let a new one in",
  ignore,
  fn: async () => {
    const s = await start({ maxConnections: 2 });
    try {
      const first = await RawH2Client.open(s.server.port);
      await first.until(() => first.frames.length > 0);
      const second = await RawH2Client.open(s.server.port);
      await second.until(() => second.frames.length > 0);
      // Both idle now (the first longer): a third makes the first go, with GOAWAY.
      const third = await RawH2Client.open(s.server.port);
      await third.until(() => third.frames.length > 0);
      await first.closed();
      assert.equal(first.goawayCode, 0, "the idlest connection got GOAWAY NO_ERROR");
      assert.equal(second.closedByServer, false);
      assert.equal(s.server.connectionCount, 2);
      await second.close();
      await third.close();
    } finally {
      await s.close();
    }
  },
});

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

Deno.test({
  name:
    "native h2c server survives running out of file descriptors (EMFILE on accept) and serves again",
  ignore,
  fn: async () => {
    const probe =
      new URL("../../tests/fixtures/h2_native_serve_probe.ts", import.meta.url).pathname;
    // a hard limit of 96 descriptors: the runtime keeps a few dozen, the rest go to clients
    const child = new Deno.Command("bash", {
      args: ["-c", `ulimit -n 96 && exec "${Deno.execPath()}" run -A "${probe}"`],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    const raws: RawH2Client[] = [];
    /** Reads the probe's stdout until it printed `line`. */
    const printed = async (line: string) => {
      while (!text.split("\n").some((l) => l.startsWith(line))) {
        const { value, done } = await lines.read();
        if (done) throw new Error(`probe exited before printing ${line}: ${text}`);
        text += value;
      }
    };
    // bounded: a probe that never prints what is awaited is killed after 30 s
    const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    try {
      await printed("listening ");
      const url = /listening (\S+)/.exec(text)![1];
      const port = Number(new URL(url).port);
      // more connections than descriptors: the kernel queues them, accept fails with EMFILE
      for (let i = 0; i < 120; i++) raws.push(await RawH2Client.open(port));
      await printed("accept-failed");
      for (const r of raws) await r.close();
      const client = await createNativeH2Client(url, { timeoutMs: 5000 });
      try {
        await assertServes(client);
      } finally {
        await client.close();
      }
      child.kill("SIGTERM");
      for (;;) {
        const { value, done } = await lines.read();
        if (done) break;
        text += value;
      }
      const status = await child.status;
      assert.equal(status.code, 0, text);
      const errors = Number(/accept-errors (\d+)/.exec(text)?.[1] ?? -1);
      assert.ok(errors > 0, `the probe saw no accept error: ${text}`);
    } finally {
      clearTimeout(killer);
      for (const r of raws) await r.close();
      try {
        child.kill("SIGKILL");
      } catch {
        // already exited
      }
      await child.status;
      await child.stderr.cancel().catch(() => {});
      await lines.cancel().catch(() => {});
    }
  },
});

Deno.test({
  name:
    "native h2c server sends small responses straight on the socket and the rest of a 16 MiB one through Deno's write to a client that stopped reading, every byte intact once it reads",
  ignore,
  fn: async () => {
    const s = await start({ stallTimeoutMs: 60_000 });
    const want = await payload(16 * MiB);
    try {
      for (let i = 0; i < 3; i++) await assertServes(s.client);
      assert.equal(s.server.fallbackWrites, 0, "a small response waited for Deno's write");
      const raw = await openNonReading(s.server.port, `/nbench/v1/payload?size=${16 * MiB}`);
      try {
        // more than the socket buffers hold: the kernel takes less than all
        await until(() => s.server.fallbackWrites > 0, "a write through Deno's write", 10_000);
        await assertServes(s.client); // the blocked connection holds up no other
        raw.resume();
        await raw.until(() => streamEnded(raw, 1), 20_000);
        assert.equal(raw.closedByServer, false);
        assert.equal(raw.frames.some((f) => f.type === FRAME.RST_STREAM), false);
        const got = streamBody(raw, 1);
        assert.equal(got.length, want.length);
        assert.equal(firstDifference(got, want), -1, "the body differs");
        await assertServes(s.client);
      } finally {
        await raw.close();
      }
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name:
    "native h2c server closes a connection whose client stopped reading from TCP after the stall timeout and serves the rest",
  ignore,
  fn: async () => {
    const s = await start({ stallTimeoutMs: 300 });
    try {
      await assertServes(s.client);
      const raw = await openNonReading(s.server.port, `/nbench/v1/payload?size=${16 * MiB}`);
      try {
        await until(() => s.server.connectionCount === 2, "the second connection");
        await until(() => s.server.fallbackWrites > 0, "a write through Deno's write", 10_000);
        await until(
          () => s.server.connectionCount === 1,
          "the stalled connection to close",
          10_000,
        );
        await assertServes(s.client);
      } finally {
        await raw.close();
      }
    } finally {
      await s.close();
    }
  },
});
