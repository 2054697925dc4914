/**
 * `lab serve` as an independent QUIC peer finds it: by default its h3 reads
 * every datagram in the module with its ECN mark, so a client that checks the
 * server's ACK_ECN counts (ngtcp2's ECN validation, RFC 9000 §13.4.2) keeps
 * marking; with `--no-h3-exact-ecn` the first datagram of each wake-up is read
 * through Deno, counted unmarked, and the client's validation stops its marks.
 */
import assert from "node:assert/strict";
import { createNativeH3Client } from "../transports/h3/mod.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import { startLabServe } from "./support.ts";

const ignore = H3_SKIP !== null;

/** Uploads 4 × 256 KiB to `lab serve` and returns the client's marked and sent datagrams. */
async function clientMarks(exactOnServer: boolean): Promise<{ marked: number; sent: number }> {
  const srv = await startLabServe({
    transports: ["h3"],
    stack: "native",
    // Deno's reactor reads the first datagram of a wake-up only on the runtime's I/O
    ...(exactOnServer ? {} : { h3ExactEcn: false, h3Io: "runtime" as const }),
  });
  try {
    const client = await createNativeH3Client(srv.urls.h3!, {
      tls: { ca: { path: `${srv.stateDir}/ca.pem` } },
      exactEcn: true,
      timeoutMs: 10_000,
    });
    try {
      const body = new Uint8Array(256 * 1024).fill(0x61);
      for (let i = 0; i < 4; i++) {
        const res = await client.request({
          method: "POST",
          path: "/nbench/v1/echo",
          headers: { "content-type": "application/octet-stream" },
          body,
        });
        assert.equal(res.status, 200);
        assert.equal(res.body.length, body.length);
      }
      const c = client.datagramStats()!;
      return { marked: c.ecnSent, sent: c.datagramsSent };
    } finally {
      await client.close();
    }
  } finally {
    await srv.stop();
  }
}

Deno.test({
  name:
    "lab serve's h3 counts every ECN mark by default, so a validating client keeps marking; read through Deno it does not",
  ignore,
  sanitizeResources: false,
  fn: async () => {
    const exact = await clientMarks(true);
    assert.ok(exact.sent > 500, `client sent ${exact.sent} datagrams`);
    assert.ok(
      exact.marked > 0.9 * exact.sent,
      `stock lab serve: client marked ${exact.marked} of ${exact.sent}`,
    );
    const deno = await clientMarks(false);
    assert.ok(
      deno.marked < 0.1 * deno.sent,
      `--no-h3-exact-ecn: client still marked ${deno.marked} of ${deno.sent}`,
    );
  },
});
