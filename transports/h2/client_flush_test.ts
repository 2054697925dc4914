/**
 * When the native h2 client's requests leave: the ones a turn of the event
 * loop submits go in one send at the turn's end, but every 16th at once, so a
 * server can start on a batch's first requests while the client still hands
 * out the answers that brought them. Read on the server's side of the socket,
 * on both I/O paths.
 */
import assert from "node:assert/strict";
import { createNativeH2Client } from "./client.ts";
import { EARLY_FLUSH_REQUESTS } from "./client_session.ts";
import { CLIENT_PREFACE_LEN, H2_NATIVE_SKIP, headersQueued, waitForHeaders } from "./_test_util.ts";
import { socketFd } from "../native/nodelay.ts";
import type { NativeIo } from "../native/io_loop.ts";

const ignore = H2_NATIVE_SKIP !== null;

/** HEADERS frames (requests) the server's socket `fd` holds unread. */
const requestsQueued = (fd: number) => headersQueued(fd, CLIENT_PREFACE_LEN);

for (const io of ["runtime", "module"] as NativeIo[]) {
  Deno.test({
    name: `native h2c client (${io} I/O) sends a turn's ${EARLY_FLUSH_REQUESTS}th request at ` +
      "once and the others at the turn's end",
    ignore,
    fn: async () => {
      assert.equal(EARLY_FLUSH_REQUESTS, 16);
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = (listener.addr as Deno.NetAddr).port;
      const client = await createNativeH2Client(`http://127.0.0.1:${port}`, {
        io,
        timeoutMs: 5000,
      });
      const answers: Promise<unknown>[] = [];
      const ask = () => answers.push(client.request({ path: "/x" }).catch(() => {}));
      let conn: Deno.TcpConn | undefined;
      try {
        ask(); // opens the connection
        conn = await listener.accept();
        const fd = socketFd(conn.localAddr as Deno.NetAddr, conn.remoteAddr as Deno.NetAddr);
        assert.ok(fd !== undefined, "the accepted socket's fd");
        assert.equal(await waitForHeaders(fd, 1, CLIENT_PREFACE_LEN), 1);
        // One turn: nothing below awaits until the last check.
        for (let i = 0; i < 15; i++) ask();
        assert.equal(requestsQueued(fd), 1, "15 requests wait for the turn's end");
        ask();
        assert.equal(requestsQueued(fd), 17, "the 16th sends all 16 at once");
        for (let i = 0; i < 3; i++) ask();
        assert.equal(requestsQueued(fd), 17, "the count starts again");
        assert.equal(
          await waitForHeaders(fd, 20, CLIENT_PREFACE_LEN),
          20,
          "the rest leave at the turn's end",
        );
      } finally {
        await client.close();
        conn?.close();
        listener.close();
        await Promise.all(answers);
      }
    },
  });
}
