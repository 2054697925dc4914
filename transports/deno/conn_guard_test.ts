import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import { ConnectionGuard } from "./conn_guard.ts";
import { createDenoH2cServer } from "./server.ts";

Deno.test("a connection guard over its cap shuts idle connections and keeps the ones with a request in flight", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  const guard = new ConnectionGuard(port, {
    maxConnections: 5,
    handshakeTimeoutMs: 60_000,
    idleTimeoutMs: 60_000,
  });
  /** Client side and server side of each connection, oldest first. */
  const pairs: [Deno.Conn, Deno.Conn][] = [];
  const connect = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const client = await Deno.connect({ hostname: "127.0.0.1", port });
      pairs.push([client, await listener.accept()]);
    }
  };
  const buf = new Uint8Array(16);
  const busy = [0, 7, 12, 16, 19];
  try {
    await connect(5);
    guard.sweep();
    assert.equal(guard.counts.cap, 0, "at the cap nothing is closed");
    assert.equal(guard.open, 5);
    await connect(15);
    // Old and new alike: the five with a request in flight stay, fifteen idle ones go.
    for (const i of busy) guard.requestStarted((pairs[i][0].localAddr as Deno.NetAddr).port);
    guard.sweep();
    assert.equal(guard.counts.cap, 15);
    assert.equal(guard.open, 5);
    for (const [i, [client]] of pairs.entries()) {
      if (busy.includes(i)) continue;
      assert.equal(await client.read(buf), null, `idle connection ${i} was not ended`);
    }
    // The busy five still carry bytes both ways.
    for (const i of busy) {
      const [client, server] = pairs[i];
      await client.write(new Uint8Array([1]));
      assert.equal(await server.read(buf), 1);
      await server.write(new Uint8Array([2]));
      assert.equal(await client.read(buf), 1);
    }
  } finally {
    guard.close();
    for (const c of pairs.flat()) {
      try {
        c.close();
      } catch { /* already closed */ }
    }
    listener.close();
  }
});

Deno.test("a connection guard's sweep reports connections gone since the sweep before, once", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  const guard = new ConnectionGuard(port, {});
  let reports = 0;
  guard.onGone = () => reports++;
  const pairs: [Deno.Conn, Deno.Conn][] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const client = await Deno.connect({ hostname: "127.0.0.1", port });
      pairs.push([client, await listener.accept()]);
    }
    guard.sweep();
    assert.equal(guard.open, 3);
    assert.equal(reports, 0, "new connections reported as gone");
    for (const c of pairs.splice(0, 2).flat()) c.close();
    guard.sweep();
    assert.equal(guard.open, 1);
    assert.equal(reports, 1);
    guard.sweep();
    assert.equal(reports, 1, "reported again with nothing gone");
  } finally {
    guard.close();
    for (const c of pairs.flat()) c.close();
    listener.close();
  }
});

/** The client preface and an empty SETTINGS frame: what an h2c client sends first. */
const PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const EMPTY_SETTINGS = new Uint8Array([0, 0, 0, 4, 0, 0, 0, 0, 0]);

Deno.test("an h2c listener holding its connection cap ends every connection beyond it and serves the rest", async () => {
  const server = await createDenoH2cServer(createHandler(), {
    maxConnections: 5,
    handshakeTimeoutMs: 60_000,
    idleTimeoutMs: 60_000,
  });
  const conns: Deno.Conn[] = [];
  const bound = Promise.withResolvers<never>();
  const timer = setTimeout(() => bound.reject(new Error("not settled within 10 s")), 10_000);
  try {
    for (let i = 0; i < 20; i++) {
      conns.push(await Deno.connect({ hostname: "127.0.0.1", port: server.port }));
    }
    // Each connection's first read: EOF when the listener ends it, bytes when it answers.
    const firstRead = conns.map((c) => c.read(new Uint8Array(1024)).catch(() => null));
    const ended = new Set<number>();
    const fifteenEnded = Promise.withResolvers<void>();
    firstRead.forEach((p, i) =>
      p.then((n) => {
        if (n === null) ended.add(i);
        if (ended.size === 15) fifteenEnded.resolve();
      })
    );
    await Promise.race([fifteenEnded.promise, bound.promise]);
    const kept = conns.map((_, i) => i).filter((i) => !ended.has(i));
    assert.equal(kept.length, 5);
    // The five kept are served: each answers a client preface with the server's SETTINGS.
    for (const i of kept) {
      await conns[i].write(PREFACE);
      await conns[i].write(EMPTY_SETTINGS);
    }
    const answers = await Promise.race([Promise.all(kept.map((i) => firstRead[i])), bound.promise]);
    for (const n of answers) assert.ok(n !== null && n >= 9, "no SETTINGS from the server");
    assert.equal(ended.size, 15, "a kept connection ended meanwhile");
  } finally {
    clearTimeout(timer);
    for (const c of conns) {
      try {
        c.close();
      } catch { /* ended by the server */ }
    }
    await server.close();
  }
});
