/**
 * One header-section cap on every server: 16 KiB (name + value + 32 bytes per
 * field), advertised in SETTINGS. A request over it gets its protocol's
 * stream error (h2 RST_STREAM ENHANCE_YOUR_CALM, h3 H3_EXCESSIVE_LOAD) while
 * the same connection and other clients keep being served. The native
 * clients speak to both stacks' servers.
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import {
  createClient,
  createServer,
  type StackName,
  type TransportName,
} from "../transports/mod.ts";
import { DEFAULT_MAX_HEADER_SECTION_BYTES } from "../transports/server_limits.ts";
import { FRAME, H2_NATIVE_SKIP, RawH2Client } from "../transports/h2/_test_util.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import { testPki } from "./support.ts";

const GET = { method: "GET", path: "/nbench/v1/payload?size=16", headers: {} };
/** A header whose field alone passes the cap. */
const OVERSIZED = { "x-big": "b".repeat(DEFAULT_MAX_HEADER_SECTION_BYTES) };
/** A header section just under the cap, with room for the client's own SBI headers. */
const UNDER = { "x-big": "b".repeat(DEFAULT_MAX_HEADER_SECTION_BYTES - 1024) };

/**
 * What the oversized request gets: its stream reset with this code, or (deno h3, whose QUIC cannot
 * reset a stream with a code: an aborted stream ends cleanly) a 431 answer.
 */
const SERVERS: {
  transport: TransportName;
  stack: StackName;
  skip: string | null;
  error: RegExp | 431;
}[] = [
  { transport: "h2c", stack: "native", skip: H2_NATIVE_SKIP, error: /error 0xb\b/ },
  { transport: "h2-tls", stack: "native", skip: H2_NATIVE_SKIP, error: /error 0xb\b/ },
  { transport: "h3", stack: "native", skip: H3_SKIP, error: /error 0x107\b/ },
  { transport: "h3", stack: "deno", skip: H3_SKIP, error: 431 },
];

for (const { transport, stack, skip, error } of SERVERS) {
  Deno.test({
    name:
      `${stack} ${transport} server refuses a request whose header section passes 16 KiB (stream reset with its protocol's code; deno h3: 431) and keeps serving that connection and others`,
    ignore: skip !== null,
    fn: async () => {
      const pki = await testPki();
      const server = await createServer(transport, createHandler(), {
        tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
        stack,
      });
      // Native clients on both stacks: Deno's QUIC reads a peer's RESET_STREAM as a clean end, code lost.
      const open = () =>
        createClient(transport, server.url, {
          stack: "native",
          tls: { ca: pki.caCertPem },
          timeoutMs: 5000,
        });
      const a = await open(), b = await open();
      try {
        assert.equal((await a.request(GET)).status, 200);
        assert.equal((await a.request({ ...GET, headers: UNDER })).status, 200);
        const big = a.request({ ...GET, headers: OVERSIZED });
        if (error === 431) assert.equal((await big).status, 431);
        else await assert.rejects(big, error);
        const [again, other] = await Promise.all([a.request(GET), b.request(GET)]);
        assert.equal(again.status, 200, "the connection that sent it");
        assert.equal(other.status, 200, "another client");
      } finally {
        await a.close();
        await b.close();
        await server.close();
      }
    },
  });
}

Deno.test({
  name:
    "native h2c server advertises its 16 KiB header-section cap as SETTINGS_MAX_HEADER_LIST_SIZE",
  ignore: H2_NATIVE_SKIP !== null,
  fn: async () => {
    const server = await createServer("h2c", createHandler(), { stack: "native" });
    const raw = await RawH2Client.open(server.port);
    try {
      await raw.until(() => raw.frames.some((f) => f.type === FRAME.SETTINGS && f.payload.length));
      const settings = raw.frames.find((f) => f.type === FRAME.SETTINGS && f.payload.length)!;
      const view = new DataView(settings.payload.buffer, settings.payload.byteOffset);
      const entries = new Map<number, number>();
      for (let o = 0; o + 6 <= settings.payload.length; o += 6) {
        entries.set(view.getUint16(o), view.getUint32(o + 2));
      }
      assert.equal(entries.get(6 /* MAX_HEADER_LIST_SIZE */), DEFAULT_MAX_HEADER_SECTION_BYTES);
    } finally {
      await raw.close();
      await server.close();
    }
  },
});
