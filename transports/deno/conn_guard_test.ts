import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import { createH2cServer } from "./server.ts";

/** Whether the server ends `conn` within `ms` (EOF or reset). */
async function endsWithin(conn: Deno.Conn, ms: number): Promise<boolean> {
  const timer = setTimeout(() => conn.close(), ms);
  let ended = false;
  try {
    ended = (await conn.read(new Uint8Array(1024))) === null;
  } catch (err) {
    ended = !(err instanceof Deno.errors.BadResource) && !(err instanceof Deno.errors.Interrupted);
  } finally {
    clearTimeout(timer);
  }
  return ended;
}

Deno.test("an h2c listener holding its connection cap closes the newest connections beyond it", async () => {
  const server = await createH2cServer(createHandler(), {
    maxConnections: 5,
    handshakeTimeoutMs: 60_000,
    idleTimeoutMs: 60_000,
  });
  const conns: Deno.Conn[] = [];
  try {
    const port = server.port;
    for (let i = 0; i < 5; i++) conns.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    // Let one sweep see the first five before the rest arrive.
    await new Promise((r) => setTimeout(r, 700));
    for (let i = 0; i < 15; i++) conns.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    const ended = await Promise.all(conns.map((c, i) => endsWithin(c, i < 5 ? 2000 : 3000)));
    assert.deepEqual(ended.slice(0, 5), [false, false, false, false, false], "the first five stay");
    assert.equal(ended.slice(5).filter(Boolean).length, 15, "every one beyond the cap is closed");
  } finally {
    for (const c of conns) {
      try {
        c.close();
      } catch { /* closed by the timer */ }
    }
    await server.close();
  }
});
