/**
 * Memory comes back after the clients leave: `lab serve` (native stack) sends
 * a burst of large responses of distinct sizes, the client goes, and the
 * server's resident size returns close to where it started.
 *
 * Method: the server's RSS is `VmRSS` of /proc/<pid>/status, read after a full
 * garbage collection that the test asks for through the server's inspector
 * (`--inspect`), so that the figure does not depend on when V8 would have
 * collected the dead bodies by itself. The payload cache (64 MiB of bodies)
 * is full before the start is read and after the burst, so it does not count.
 * With glibc's defaults the server kept 76–80 MiB above its start: the freed
 * bodies stayed in its heap (see transports/heap_return.ts); now about 1 MiB.
 */
import assert from "node:assert/strict";
import { createClient } from "../transports/mod.ts";
import { labCommand } from "../lib/lab_serve.ts";
import { freePort, rssBytes, startLabServe, testTransports } from "./support.ts";

const MiB = 1024 * 1024;
/** Most the server may keep above its start. */
const BOUND = 32 * MiB;
/** Bodies that fill the payload cache (64 MiB, handler/payload.ts) before the start is read. */
const CACHED = 8;
/** Responses in the burst: distinct sizes from 7.2 MiB down to about 3.4 MiB. */
const BURST = 40;

/** One DevTools protocol session with a process's inspector. */
async function inspector(port: number): Promise<{
  call(method: string): Promise<unknown>;
  close(): Promise<void>;
}> {
  const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let next = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    waiting.get(m.id)?.(m.result);
    waiting.delete(m.id);
  };
  return {
    call(method) {
      const id = ++next;
      const { promise, resolve } = Promise.withResolvers<unknown>();
      waiting.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params: {} }));
      return promise;
    },
    async close() {
      const closed = new Promise((r) => (ws.onclose = r));
      ws.close();
      await closed;
    },
  };
}

Deno.test({
  ignore: !(await testTransports("native")).includes("h2c") || Deno.build.os !== "linux",
  name:
    "lab serve gives back the memory of 40 large responses of distinct sizes once the client left (RSS after a full GC within 32 MiB of its start)",
  fn: async () => {
    const port = freePort();
    const lab = labCommand();
    lab.splice(2, 0, `--inspect=127.0.0.1:${port}`);
    const srv = await startLabServe({ stack: "native", transports: ["h2c"] }, { lab });
    let session: Awaited<ReturnType<typeof inspector>> | undefined;
    try {
      session = await inspector(port);
      const client = await createClient("h2c", srv.urls.h2c!, { timeoutMs: 30_000 });
      try {
        // Fill the payload cache first (8 bodies near 8 MiB), so that it holds as much after.
        const get = async (i: number) => {
          const size = 8 * MiB - 1 - i * 100_000;
          const res = await client.request({
            method: "GET",
            path: `/nbench/v1/payload?size=${size}`,
          });
          assert.equal(res.body.length, size, `response ${i}: ${res.status}`);
        };
        for (let i = 0; i < CACHED; i++) await get(i);
        await session.call("HeapProfiler.collectGarbage");
        const before = rssBytes(srv.pid);
        for (let i = CACHED; i < CACHED + BURST; i++) await get(i);
        await client.close();
        await session.call("HeapProfiler.collectGarbage");
        // The heap is trimmed within 2 s of the close (heap_return.ts): read until then.
        const deadline = performance.now() + 3000;
        let kept = rssBytes(srv.pid) - before;
        while (kept > BOUND && performance.now() < deadline) {
          await new Promise((r) => setTimeout(r, 100));
          kept = rssBytes(srv.pid) - before;
        }
        assert.ok(
          kept <= BOUND,
          `the server kept ${(kept / MiB).toFixed(0)} MiB above its start (bound ${BOUND / MiB})`,
        );
      } finally {
        await client.close();
      }
    } finally {
      await session?.close();
      await srv.stop();
    }
  },
});
