/**
 * What an adversarial client does to `lab serve`, one test per attack and
 * stack (the same options drive both): more connections than the fd limit
 * allows, connections that never start a request or go idle, and HTTP/2
 * clients that open many streams with window 0 and never read. The server
 * runs in a child process and must keep serving every transport.
 */
import assert from "node:assert/strict";
import { createClient, type StackName, STACKS, type TransportName } from "../transports/mod.ts";
import type { LabServeLimits, LabServeOptions } from "../lib/lab_serve.ts";
import * as h2 from "../soak/h2_frames.ts";
import { rssBytes, startLabServe, testTransports } from "./support.ts";
import type { FloodCounts } from "../soak/handshake_flood.ts";

const TRANSPORTS_OF = {
  native: await testTransports("native"),
  deno: await testTransports("deno"),
};

/** Sends one GET on `transport` and checks it answers 200 with the 100 bytes asked for. */
async function serves(transport: TransportName, url: string, ca: string): Promise<void> {
  const client = await createClient(transport, url, {
    tls: { ca: { path: ca } },
    timeoutMs: 5000,
  });
  try {
    const res = await client.request({ method: "GET", path: "/nbench/v1/payload?size=100" });
    assert.equal(res.status, 200, `${transport} answered ${res.status}`);
    assert.equal(res.body.length, 100, `${transport} sent ${res.body.length} bytes`);
  } finally {
    await client.close().catch(() => {});
  }
}

/**
 * {@linkcode serves}, tried again while the listener refuses or resets the
 * connection, for up to `ms`; any other failure ends it at once.
 */
async function servesWithin(
  transport: TransportName,
  url: string,
  ca: string,
  ms: number,
): Promise<void> {
  const deadline = Date.now() + ms;
  for (let attempt = 1;; attempt++) {
    try {
      return await serves(transport, url, ca);
    } catch (err) {
      const refused = /ConnectionRefused|ConnectionReset|Connection refused|Connection reset/
        .test(`${err} ${(err as Error).cause ?? ""}`);
      if (!refused || Date.now() > deadline) {
        throw new Error(`${transport} still failing after ${attempt} attempts: ${err}`, {
          cause: err,
        });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** `lab serve` on `stack` with `transports` on free ports, and `limits`. */
function serveOptions(
  stack: StackName,
  transports: readonly TransportName[],
  limits: LabServeLimits,
): LabServeOptions {
  return { stack, transports, limits };
}

function port(url: string): number {
  return Number(new URL(url).port);
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

/**
 * Resolves with the ms until the server cut off every one of `streams`: it
 * closed the connection (EOF or reset), or it reset each stream (RST_STREAM);
 * bounded by `ms`.
 */
async function streamsCutAfter(
  conn: Deno.Conn,
  streams: number[],
  start: number,
  ms: number,
): Promise<number> {
  const open = new Set(streams);
  const timer = setTimeout(() => conn.close(), ms);
  let pending = new Uint8Array(0);
  const buf = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      const joined = new Uint8Array(pending.length + n);
      joined.set(pending);
      joined.set(buf.subarray(0, n), pending.length);
      let off = 0;
      while (joined.length - off >= 9) {
        const len = (joined[off] << 16) | (joined[off + 1] << 8) | joined[off + 2];
        if (joined.length - off < 9 + len) break;
        const type = joined[off + 3];
        const id = new DataView(joined.buffer, off + 5, 4).getUint32(0) & 0x7fffffff;
        if (type === 3) open.delete(id); // RST_STREAM
        off += 9 + len;
      }
      pending = joined.slice(off);
      if (open.size === 0) break;
    }
  } catch {
    // reset by the server, or closed by the timer
  } finally {
    clearTimeout(timer);
  }
  return Date.now() - start;
}

/** Reads the server's first frames (its SETTINGS) and acknowledges them, as a client does. */
async function ackServerSettings(conn: Deno.Conn): Promise<void> {
  const timer = setTimeout(() => conn.close(), 5000);
  try {
    assert.ok((await conn.read(new Uint8Array(16384))) !== null, "no server SETTINGS");
  } finally {
    clearTimeout(timer);
  }
  await writeAll(conn, h2.settingsAck());
}

/** Resolves with the ms until the peer closes `conn` (EOF or reset), bounded by `ms`. */
async function closedAfter(conn: Deno.Conn, start: number, ms: number): Promise<number> {
  const buf = new Uint8Array(16384);
  const timer = setTimeout(() => conn.close(), ms);
  try {
    while ((await conn.read(buf)) !== null) { /* discard what the server sends */ }
  } catch {
    // reset by the server, or closed by the timer
  } finally {
    clearTimeout(timer);
  }
  return Date.now() - start;
}

for (const stack of STACKS) {
  const available = TRANSPORTS_OF[stack];
  Deno.test({
    name: `lab serve under ulimit -n 256 survives 400 idle connections and keeps serving ${
      available.join(", ")
    } (${stack} stack)`,
    ignore: !available.includes("h2c"),
    sanitizeResources: false,
    fn: async () => {
      // A connection cap above what 256 descriptors hold, so accepting does fail.
      const srv = await startLabServe(
        serveOptions(stack, available, { maxConnections: 1000, handshakeTimeoutMs: 1500 }),
        { nofile: 256 },
      );
      const held: Deno.Conn[] = [];
      try {
        const target = port(srv.urls.h2c!);
        const opened = await Promise.allSettled(
          Array.from({ length: 400 }, () => Deno.connect({ hostname: "127.0.0.1", port: target })),
        );
        for (const r of opened) if (r.status === "fulfilled") held.push(r.value);
        assert.ok(held.length > 200, `only ${held.length} connections opened`);
        // One byte of the preface on each, still idle for HTTP/2: a connection whose final ACK
        // the server's kernel dropped in the burst exists on this side only and would wait
        // forever; the byte makes that kernel answer with a reset instead.
        const p = new Uint8Array([0x50]);
        await Promise.allSettled(held.map((c) => c.write(p)));
        // At the fd limit the server still ends every one of them after the handshake
        // timeout (those it could not accept yet once it can); then it has descriptors again.
        const start = Date.now();
        const ends = await Promise.all(held.map((c) => closedAfter(c, start, 20_000)));
        const late = ends.filter((ms) => ms >= 20_000).length;
        assert.equal(late, 0, `${late} of ${held.length} connections still open after 20 s`);
        const ca = `${srv.stateDir}/ca.pem`;
        // Deno.serve closes its listener when accepting fails, and sbilab opens it again once
        // descriptors are free: until then a connection is refused (or reset in the queue of a
        // listener that fails), so the deno stack is given a bounded wait for it. The native
        // listener never closes: one try.
        for (const t of available) {
          if (stack === "native") await serves(t, srv.urls[t]!, ca);
          else await servesWithin(t, srv.urls[t]!, ca, 10_000);
        }
        assert.ok(srv.running(), `lab serve exited:\n${srv.stderr()}`);
        // The flood did reach the fd limit: accepting failed (one wording on every stack).
        assert.match(srv.stderr(), /h2c: Accepting connections failed: .*Too many open files/);
      } finally {
        for (const c of held) {
          try {
            c.close();
          } catch { /* closed by the server */ }
        }
        const status = await srv.stop();
        assert.doesNotMatch(srv.stderr(), /Uncaught/);
        assert.equal(status.signal ?? "SIGTERM", "SIGTERM");
        assert.equal(status.code, 0, srv.stderr());
      }
    },
  });
}

for (const stack of STACKS) {
  const available = TRANSPORTS_OF[stack];
  Deno.test({
    ignore: !available.includes("h2c"),
    name:
      `lab serve closes connections that never start a request or go idle within the timeouts (${stack} stack)`,
    sanitizeResources: false,
    fn: async (t) => {
      const srv = await startLabServe(
        serveOptions(stack, ["h2c", "h2-tls"], { handshakeTimeoutMs: 1000, idleTimeoutMs: 1000 }),
      );
      const plain = { hostname: "127.0.0.1", port: port(srv.urls.h2c!) };
      const tls = { hostname: "127.0.0.1", port: port(srv.urls["h2-tls"]!) };
      const ca = await Deno.readTextFile(`${srv.stateDir}/ca.pem`);
      const check = (ms: number) => {
        assert.ok(ms >= 900, `closed after ${ms} ms, before the timeout`);
        assert.ok(ms < 5000, `closed after ${ms} ms`);
      };
      try {
        await t.step("h2c without a preface", async () => {
          const c = await Deno.connect(plain);
          check(await closedAfter(c, Date.now(), 8000));
        });
        await t.step("h2c with a preface trickling one byte at a time", async () => {
          const c = await Deno.connect(plain);
          const start = Date.now();
          const trickle = (async () => {
            for (const b of h2.PREFACE) {
              try {
                await c.write(new Uint8Array([b]));
              } catch {
                return;
              }
              await new Promise((r) => setTimeout(r, 200));
            }
          })();
          check(await closedAfter(c, start, 8000));
          await trickle;
        });
        await t.step("h2c idle after the preface and SETTINGS", async () => {
          const c = await Deno.connect(plain);
          const start = Date.now();
          await writeAll(c, h2.PREFACE);
          await writeAll(c, h2.settingsFrame([]));
          await ackServerSettings(c);
          check(await closedAfter(c, start, 8000));
        });
        await t.step("h2c idle after a request", async () => {
          const c = await Deno.connect(plain);
          await writeAll(c, h2.PREFACE);
          await writeAll(c, h2.settingsFrame([]));
          await ackServerSettings(c);
          await writeAll(
            c,
            h2.headersFrame(1, h2.requestBlock("GET", "/nbench/v1/payload?size=10", "x")),
          );
          const start = Date.now();
          check(await closedAfter(c, start, 8000));
        });
        await t.step("h2-tls with a ClientHello that never completes", async () => {
          const c = await Deno.connect(tls);
          const start = Date.now();
          await writeAll(c, new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
          check(await closedAfter(c, start, 8000));
        });
        await t.step("h2-tls idle after the handshake", async () => {
          // The handshake timeout counts from accept, the TLS handshake included.
          const start = Date.now();
          const c = await Deno.connectTls({ ...tls, caCerts: [ca], alpnProtocols: ["h2"] });
          await c.handshake();
          check(await closedAfter(c, start, 8000));
        });
        assert.ok(srv.running());
      } finally {
        await srv.stop();
      }
    },
  });
}

for (const stack of STACKS) {
  const available = TRANSPORTS_OF[stack];
  Deno.test({
    ignore: !available.includes("h2c"),
    name:
      `an h2c client with window 0 asking 16 MiB on 200 streams stays under 256 MiB of server RSS and is cut off after the stall timeout (${stack} stack)`,
    sanitizeResources: false,
    fn: async () => {
      const srv = await startLabServe(serveOptions(stack, ["h2c"], { stallTimeoutMs: 2000 }));
      const target = port(srv.urls.h2c!);
      let conn: Deno.Conn | undefined;
      try {
        // Warm the payload cache first, so the bound measures what the attack costs.
        await serves("h2c", srv.urls.h2c!, "");
        const before = rssBytes(srv.pid);
        conn = await Deno.connect({ hostname: "127.0.0.1", port: target });
        await writeAll(conn, h2.PREFACE);
        await writeAll(conn, h2.settingsFrame([[h2.SETTING.INITIAL_WINDOW_SIZE, 0]]));
        const streams = Array.from({ length: 200 }, (_, i) => 1 + 2 * i);
        for (const id of streams) {
          const block = h2.requestBlock("GET", "/nbench/v1/payload?size=16777216", "x");
          await writeAll(conn, h2.headersFrame(id, block));
        }
        const start = Date.now();
        // Cut off: every stream reset (native), or the connection closed (deno, which
        // cannot reset one stream).
        let cut = false;
        const cutOff = streamsCutAfter(conn, streams, start, 10_000).finally(() => (cut = true));
        // The server's RSS, sampled every 100 ms until the attacker is cut off.
        let peak = before;
        const sampling = (async () => {
          while (!cut) {
            peak = Math.max(peak, rssBytes(srv.pid));
            let tick: ReturnType<typeof setTimeout> | undefined;
            await Promise.race([cutOff, new Promise((r) => (tick = setTimeout(r, 100)))]);
            clearTimeout(tick);
          }
        })();
        // Meanwhile other clients are served.
        await serves("h2c", srv.urls.h2c!, "");
        const ms = await cutOff;
        await sampling;
        const grew = peak - before;
        assert.ok(grew < 256 * 1024 * 1024, `RSS grew by ${(grew / 2 ** 20).toFixed(0)} MiB`);
        assert.ok(ms >= 1900 && ms < 6000, `cut off after ${ms} ms (stall timeout 2000 ms)`);
        assert.ok(srv.running());
      } finally {
        try {
          conn?.close();
        } catch { /* already closed */ }
        await srv.stop();
      }
    },
  });
}

/**
 * Opens `conns` h2c connections with window 0 that ask `/nbench/v1/payload`
 * on `streams` streams each, every stream a different size just under
 * 16 MiB, and never read a byte of DATA.
 */
async function zeroWindowDistinct(
  port: number,
  conns: number,
  streams: number,
): Promise<Deno.Conn[]> {
  const opened: Deno.Conn[] = [];
  for (let c = 0; c < conns; c++) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    opened.push(conn);
    const frames = [h2.PREFACE, h2.settingsFrame([[h2.SETTING.INITIAL_WINDOW_SIZE, 0]])];
    for (let i = 0; i < streams; i++) {
      const size = 16 * 1024 * 1024 - 1 - (c * streams + i);
      const block = h2.requestBlock("GET", `/nbench/v1/payload?size=${size}`, "x");
      frames.push(h2.headersFrame(1 + 2 * i, block));
    }
    const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
    let off = 0;
    for (const f of frames) {
      all.set(f, off);
      off += f.length;
    }
    await writeAll(conn, all);
  }
  return opened;
}

/** Sends one GET on `transport` and resolves with its time in ms (it must answer 200 with `size` bytes). */
async function timedServe(
  transport: TransportName,
  url: string,
  ca: string,
  size: number,
  timeoutMs: number,
): Promise<number> {
  const client = await createClient(transport, url, { tls: { ca: { path: ca } }, timeoutMs });
  try {
    const start = performance.now();
    const res = await client.request({ method: "GET", path: `/nbench/v1/payload?size=${size}` });
    const ms = performance.now() - start;
    assert.equal(res.status, 200, `${transport} answered ${res.status}`);
    assert.equal(res.body.length, size, `${transport} sent ${res.body.length} bytes`);
    return ms;
  } finally {
    await client.close().catch(() => {});
  }
}

for (const stack of STACKS) {
  const available = TRANSPORTS_OF[stack];
  Deno.test({
    ignore: !available.includes("h2c"),
    name:
      `h2c clients with window 0 asking 200 distinct sizes near 16 MiB cost the server at most its 64 MiB response budget plus 256 MiB, every transport answers within 2 s meanwhile, and the budget is free again once they leave (${stack} stack)`,
    sanitizeResources: false,
    fn: async () => {
      const srv = await startLabServe(serveOptions(stack, available, { stallTimeoutMs: 60_000 }));
      const ca = `${srv.stateDir}/ca.pem`;
      let held: Deno.Conn[] = [];
      try {
        for (const t of available) await timedServe(t, srv.urls[t]!, ca, 100, 5000);
        const before = rssBytes(srv.pid);
        let peak = before;
        let attacking = true;
        // Sampled every 50 ms; a server that is gone (killed for its memory) ends the sampling.
        const sampling = (async () => {
          while (attacking && srv.running()) {
            try {
              peak = Math.max(peak, rssBytes(srv.pid));
            } catch {
              break;
            }
            await new Promise((r) => setTimeout(r, 50));
          }
        })();
        // 4 connections × 50 streams: at 16 MiB each, 3.2 GB if every answer were built.
        held = await zeroWindowDistinct(port(srv.urls.h2c!), 4, 50);
        // Every transport answers, each within the bound, while the attack holds its streams.
        for (let round = 0; round < 3; round++) {
          for (const t of available) {
            const ms = await timedServe(t, srv.urls[t]!, ca, 1000, 5000);
            assert.ok(ms < 2000, `${t} answered after ${ms.toFixed(0)} ms under the attack`);
          }
        }
        attacking = false;
        await sampling;
        const grew = peak - before;
        assert.ok(
          grew < (64 + 256) * 1024 * 1024,
          `RSS grew by ${(grew / 2 ** 20).toFixed(0)} MiB (from ${(before / 2 ** 20).toFixed(0)})`,
        );
        for (const c of held) c.close();
        held = [];
        // The attacker left: its reservations came back, so a 16 MiB answer fits again
        // (with its connections gone, within a bounded wait for the server to notice).
        const deadline = Date.now() + 10_000;
        for (;;) {
          try {
            await timedServe("h2c", srv.urls.h2c!, ca, 16 * 1024 * 1024, 5000);
            break;
          } catch (err) {
            if (Date.now() > deadline) throw err;
            await new Promise((r) => setTimeout(r, 200));
          }
        }
        assert.ok(srv.running(), `lab serve exited:\n${srv.stderr()}`);
      } finally {
        for (const c of held) {
          try {
            c.close();
          } catch { /* already closed */ }
        }
        await srv.stop();
      }
    },
  });
}

for (const stack of STACKS) {
  const available = TRANSPORTS_OF[stack];
  Deno.test({
    ignore: !available.includes("h2c"),
    name:
      `lab serve stops within its 3 s stop bound after SIGTERM while clients with window 0 hold its answers unread (${stack} stack)`,
    sanitizeResources: false,
    fn: async () => {
      const srv = await startLabServe(
        serveOptions(stack, available, { stallTimeoutMs: 60_000, idleTimeoutMs: 60_000 }),
        { killAfterMs: 30_000 },
      );
      let held: Deno.Conn[] = [];
      try {
        // Answers the drain would wait for: every stream's peer reads nothing.
        held = await zeroWindowDistinct(port(srv.urls.h2c!), 4, 50);
        // The server took the requests in (it still answers others meanwhile).
        await timedServe("h2c", srv.urls.h2c!, `${srv.stateDir}/ca.pem`, 100, 5000);
        const start = Date.now();
        const status = await srv.stop();
        const ms = Date.now() - start;
        assert.equal(status.signal, null, `ended by ${status.signal} after ${ms} ms`);
        assert.ok(
          status.code === 0 || status.code === 143,
          `exit status ${status.code}:\n${srv.stderr()}`,
        );
        // The bound is 3 s (2 s drain + 1 s to close); 1.5 s more for the process to go.
        assert.ok(ms < 4500, `exited ${ms} ms after SIGTERM`);
      } finally {
        for (const c of held) {
          try {
            c.close();
          } catch { /* already closed */ }
        }
        await srv.stop();
      }
    },
  });
}

for (const stack of STACKS) {
  const available = TRANSPORTS_OF[stack];
  Deno.test({
    ignore: !available.includes("h2c"),
    name:
      `at its connection cap lab serve closes the idlest connection so that a new client gets in (${stack} stack)`,
    sanitizeResources: false,
    fn: async () => {
      const cap = 20;
      const srv = await startLabServe(
        serveOptions(stack, ["h2c"], {
          maxConnections: cap,
          handshakeTimeoutMs: 60_000,
          idleTimeoutMs: 60_000,
        }),
      );
      const held: Deno.Conn[] = [];
      try {
        const target = port(srv.urls.h2c!);
        // The cap filled with connections that said hello and then nothing.
        for (let i = 0; i < cap; i++) {
          const c = await Deno.connect({ hostname: "127.0.0.1", port: target });
          held.push(c);
          await writeAll(c, h2.PREFACE);
          await writeAll(c, h2.settingsFrame([]));
          await ackServerSettings(c);
        }
        // Which of the idle ones the server ends, watched from now on (bounded by 3 s each).
        const start = Date.now();
        const ends = held.map((c) => closedAfter(c, start, 3000));
        const firstEnd = Promise.race(ends);
        // A new client gets in and stays in: room is made by closing an idle connection
        // (native: as it is accepted; deno: by the next sweep), not by closing the newcomer.
        const client = await createClient("h2c", srv.urls.h2c!, { timeoutMs: 5000 });
        try {
          const path = "/nbench/v1/payload?size=100";
          assert.equal((await client.request({ method: "GET", path })).status, 200);
          assert.ok((await firstEnd) < 3000, "no idle connection was closed");
          assert.equal((await client.request({ method: "GET", path })).status, 200);
        } finally {
          await client.close().catch(() => {});
        }
        const closed = (await Promise.all(ends)).filter((ms) => ms < 3000).length;
        assert.ok(closed >= 1 && closed <= 2, `${closed} idle connections closed`);
        assert.ok(srv.running(), `lab serve exited:\n${srv.stderr()}`);
      } finally {
        for (const c of held) {
          try {
            c.close();
          } catch { /* closed by the server */ }
        }
        await srv.stop();
      }
    },
  });
}

/**
 * Runs the junk-handshake flood in `procs` processes of its own for `ms`: `going` resolves once
 * every process has flooded for a second (its first line of counts), `done` with the counts.
 */
function floodFromElsewhere(
  tlsPort: number,
  h3Port: number,
  procs: number,
  ms: number,
): { going: Promise<void>; done: Promise<FloodCounts> } {
  const script = new URL("../soak/handshake_flood.ts", import.meta.url).pathname;
  const runs = Array.from({ length: procs }, () => {
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--unstable-net",
        script,
        String(tlsPort),
        String(h3Port),
        "256",
        String(ms),
      ],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    let first!: () => void;
    const going = new Promise<void>((resolve) => (first = resolve));
    const done = (async () => {
      // One line of running counts a second; the last is the total.
      let text = "";
      for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
        text += chunk;
        if (text.includes("\n")) first();
      }
      first();
      const last = text.trim().split("\n").at(-1)!;
      await child.status;
      return JSON.parse(last) as FloodCounts;
    })();
    return { going, done };
  });
  const done = Promise.all(runs.map((r) => r.done)).then((all) => {
    const total: FloodCounts = { hellos: 0, junk: 0, initials: 0, datagrams: 0 };
    for (const c of all) {
      for (const k of Object.keys(total) as (keyof FloodCounts)[]) total[k] += c[k];
    }
    return total;
  });
  return { going: Promise.all(runs.map((r) => r.going)).then(() => {}), done };
}

for (const stack of STACKS) {
  const available = TRANSPORTS_OF[stack];
  // The deno stack's h3 is held to answering, not to the bound: Deno's QUIC can neither size its
  // UDP socket's receive buffer nor read it off the thread that runs Deno.serve's TLS handshakes,
  // and has no Retry, so under this flood the kernel drops about nine in ten datagrams sent to it,
  // an established client's among them, and a request waits out QUIC loss recovery with its timer
  // doubling: 1.3 to 5.4 s seen, one such probe in each of five runs of the flood's last 4 s
  // (probes paced at 50 a second queued behind the losses for a p99 of 3 to 6 s).
  // docs/limits.md says so.
  const unbounded = (t: TransportName) => stack === "deno" && t === "h3";
  const bounded = available.filter((t) => !unbounded(t));
  const answered = available.filter(unbounded);
  Deno.test({
    ignore: !available.includes("h2-tls"),
    name:
      `under a flood of TLS ClientHellos, QUIC Initials and junk, a steady probe's p99 stays under 1 s on ${
        bounded.join(", ")
      }${answered.length ? ` and ${answered.join(", ")} is answered` : ""} (${stack} stack)`,
    sanitizeResources: false,
    fn: async () => {
      const srv = await startLabServe(serveOptions(stack, available, {}));
      const ca = `${srv.stateDir}/ca.pem`;
      const clients = await Promise.all(
        available.map((t) =>
          createClient(t, srv.urls[t]!, { tls: { ca: { path: ca } }, timeoutMs: 20_000 })
        ),
      );
      try {
        const path = "/nbench/v1/payload?size=100";
        for (const c of clients) await c.request({ method: "GET", path });
        const tls = port(srv.urls["h2-tls"]!);
        const h3 = srv.urls.h3 ? port(srv.urls.h3) : 0;
        let flooding = true;
        // Two flooding processes; one against the deno stack, whose TLS handshakes (rustls
        // inside Deno.serve) nothing here can pace: the bound is for what sbilab controls.
        const procs = stack === "native" ? 2 : 1;
        const { going, done } = floodFromElsewhere(tls, h3, procs, 5000);
        const flood = done.finally(() => (flooding = false));
        // Probes count from the flood's first second on, when it is surely at full strength.
        await going;
        // One probe at a time on each transport, 10 ms apart, until the flood ends (bounded by
        // its 5 s); each transport on its own, so that a slow one does not thin the others out.
        const times = await Promise.all(clients.map(async (c) => {
          const took: number[] = [];
          while (flooding) {
            const start = performance.now();
            const res = await c.request({ method: "GET", path });
            took.push(performance.now() - start);
            assert.equal(res.status, 200);
            await Promise.race([flood, new Promise((r) => setTimeout(r, 10))]);
          }
          return took;
        }));
        const counts = await flood;
        assert.ok(counts.hellos > 250 * procs, `the flood sent only ${counts.hellos} ClientHellos`);
        for (const [i, t] of available.entries()) {
          const sorted = times[i].sort((a, b) => a - b);
          assert.ok(sorted.length >= 1, `${t}: no probe`);
          if (unbounded(t)) continue;
          assert.ok(sorted.length >= 5, `${t}: only ${sorted.length} probes`);
          // Over a few dozen probes the 99th percentile is the slowest one.
          const p99 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))];
          assert.ok(p99 < 1000, `${t}: p99 ${p99.toFixed(0)} ms over ${sorted.length} probes`);
        }
        assert.ok(srv.running(), `lab serve exited:\n${srv.stderr()}`);
      } finally {
        for (const c of clients) await c.close().catch(() => {});
        await srv.stop();
      }
    },
  });
}
