/**
 * When the native servers' answers leave: the answers one turn of the event
 * loop hands to a connection go in one send at the turn's end, but every 32nd
 * at once, so the client gets the first answers of a large batch while the
 * rest are being answered. Observed from inside the 33rd answer: a header
 * value read while the server encodes it looks at what the client has
 * received by then.
 */
import assert from "node:assert/strict";
import type { SbiHandler, SbiResponse } from "../handler/types.ts";
import { EARLY_FLUSH_RESPONSES } from "./server_core.ts";
import { createNativeH2cServer } from "./h2/server.ts";
import { createNativeH3Client, createNativeH3Server } from "./h3/mod.ts";
import { H3_SKIP } from "./h3/_test_util.ts";
import { createDevPki } from "./pki.ts";
import {
  FLAG,
  FRAME,
  frame,
  H2_NATIVE_SKIP,
  headersQueued,
  requestBlock,
  settingsFrame,
  waitForHeaders,
} from "./h2/_test_util.ts";
import { socketFd } from "./native/nodelay.ts";
import type { NativeIo } from "./native/io_loop.ts";

const ignore = H2_NATIVE_SKIP !== null;
const REQUESTS = 40;

/**
 * A handler answering 200 with 256 bytes; the headers of its answers whose
 * numbers `probeAt` holds run `probe` when the server reads them.
 */
function probingHandler(probeAt: number[], probe: () => void): SbiHandler {
  let n = 0;
  const body = new Uint8Array(256).fill(0x61);
  return (): Promise<SbiResponse> => {
    n++;
    const headers: Record<string, string> = { "content-type": "text/plain" };
    if (probeAt.includes(n)) {
      Object.defineProperty(headers, "x-probe", {
        enumerable: true,
        get: () => (probe(), "1"),
      });
    }
    return Promise.resolve({ status: 200, headers, body });
  };
}

for (const io of ["runtime", "module"] as NativeIo[]) {
  Deno.test({
    name: `native h2c server (${io} I/O) has sent ${EARLY_FLUSH_RESPONSES} answers of a turn ` +
      "before it encodes the next",
    ignore,
    fn: async () => {
      assert.equal(EARLY_FLUSH_RESPONSES, 32);
      let fd: number | undefined;
      const seen: number[] = [];
      const probe = () => seen.push(headersQueued(fd!));
      const server = await createNativeH2cServer(probingHandler([33], probe), { io });
      const conn = await Deno.connect({
        hostname: "127.0.0.1",
        port: Number(new URL(server.url).port),
      });
      try {
        fd = socketFd(conn.localAddr as Deno.NetAddr, conn.remoteAddr as Deno.NetAddr);
        assert.ok(fd !== undefined, "the client socket's fd");
        // The preface, SETTINGS and every request in one write: the server reads them at once.
        const bytes = [...new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")];
        bytes.push(...settingsFrame());
        for (let i = 0; i < REQUESTS; i++) {
          const block = new Uint8Array(requestBlock(`/r${i}`));
          bytes.push(...frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 2 * i + 1, block));
        }
        const all = new Uint8Array(bytes);
        for (let off = 0; off < all.length;) off += await conn.write(all.subarray(off));
        assert.equal(await waitForHeaders(fd, REQUESTS), REQUESTS, "every answer arrived");
        assert.deepEqual(seen, [32], "32 answers were on the wire when the 33rd was encoded");
      } finally {
        conn.close();
        await server.close();
      }
    },
  });
}

const h3Ignore = H3_SKIP !== null;
const pki = h3Ignore ? undefined : await createDevPki();

// On Deno's sockets, as here, the server reads every datagram of the batch in one turn: the client
// sent them all before this thread could read. The module's thread may read the batch's first
// datagrams before the rest arrive and hand it over in two turns, so the count would not line up.
for (const io of ["runtime"] as NativeIo[]) {
  Deno.test({
    name: `native h3 server (${io} I/O) has sent ${EARLY_FLUSH_RESPONSES} answers of a turn ` +
      "before it encodes the next",
    ignore: h3Ignore,
    fn: async () => {
      // Datagrams the server had sent when it encoded its 32nd and its 33rd answer.
      const sent: number[] = [];
      let probe = () => {};
      const server = await createNativeH3Server(probingHandler([33, 34], () => probe()), {
        tls: { cert: pki!.serverCertPem, key: pki!.serverKeyPem },
        io,
      });
      probe = () => sent.push(server.datagramStats()!.datagramsSent);
      const client = await createNativeH3Client(server.url, {
        tls: { ca: pki!.caCertPem },
        io: "runtime",
      });
      try {
        // The connection up first (its handshake is not part of the batch).
        assert.equal((await client.request({ path: "/warm" })).status, 200);
        // One batch of 63 more, sent together: answers 2 to 64 in one turn of the server.
        const rs = await Promise.all(
          Array.from({ length: 63 }, (_, i) => client.request({ path: `/r${i}` })),
        );
        assert.ok(rs.every((r) => r.status === 200 && r.body.length === 256));
        assert.equal(sent.length, 2);
        // Answers 2 to 33 are 32: the 33rd's flush sent them before the 34th was encoded.
        assert.ok(sent[1] > sent[0], `datagrams sent by the 33rd and the 34th answer: ${sent}`);
      } finally {
        await client.close();
        await server.close();
      }
    },
  });
}
