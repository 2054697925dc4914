/**
 * HTTP/3 interop with real peers from Debian: ngtcp2's example client and
 * server (`gtlsclient`, `gtlsserver`, packages ngtcp2-client / ngtcp2-server),
 * which run on the same libraries but share no code with our shim.
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import { createDevPki } from "../transports/pki.ts";
import { createNativeH3Client, createNativeH3Server } from "../transports/h3/mod.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import { needsTool, startGtlsServer } from "./support.ts";

const haveClient = !needsTool("gtlsclient", "ngtcp2-client");
const haveServer = !needsTool("gtlsserver", "ngtcp2-server");

Deno.test({
  name:
    "gtlsclient fetches the handler's exact bytes from our h3 server, several streams on one connection",
  ignore: H3_SKIP !== null || !haveClient,
  fn: async () => {
    const pki = await createDevPki();
    const handler = createHandler();
    const server = await createNativeH3Server(handler, {
      tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    });
    const dir = await Deno.makeTempDir();
    try {
      const sizes = [1, 256, 16384, 1048576];
      const uris = sizes.map((n) => `https://127.0.0.1:${server.port}/nbench/v1/payload?size=${n}`);
      const out = await new Deno.Command("gtlsclient", {
        args: [
          "-q",
          "--exit-on-all-streams-close",
          "--download",
          dir,
          "127.0.0.1",
          String(server.port),
          ...uris,
        ],
        stdout: "null",
        stderr: "piped",
        signal: AbortSignal.timeout(20000),
      }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      for (const n of sizes) {
        const got = await Deno.readFile(`${dir}/payload?size=${n}`);
        const want = await handler({
          method: "GET",
          path: "/nbench/v1/payload",
          query: new URLSearchParams({ size: String(n) }),
          headers: {},
          body: new Uint8Array(0),
        });
        assert.equal(got.length, n);
        assert.deepEqual(got, want.body);
      }
    } finally {
      await server.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "our h3 client fetches exact bytes from gtlsserver and verifies its certificate",
  ignore: H3_SKIP !== null || !haveServer,
  fn: async () => {
    const pki = await createDevPki();
    const files: Record<string, Uint8Array> = {
      "small.bin": crypto.getRandomValues(new Uint8Array(256)),
      "big.bin": new Uint8Array(4 * 1024 * 1024).map((_, i) => (i * 2654435761) >>> 24),
    };
    const gtls = await startGtlsServer(pki, files);
    const port = gtls.port;
    const client = await createNativeH3Client(`https://127.0.0.1:${port}`, {
      tls: { ca: pki.caCertPem },
      timeoutMs: 500,
    });
    try {
      // The server needs a moment to bind. Until it has, a request fails at once (ICMP port
      // unreachable), so retry for up to 10 s, pausing between attempts.
      let small;
      for (let i = 0; i < 200 && !small; i++) {
        small = await client.request({ path: "/small.bin" }).catch(() => undefined);
        if (!small) await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(small, "gtlsserver did not answer");
      assert.equal(small.status, 200);
      assert.deepEqual(small.body, files["small.bin"]);
      const big = await client.request({ path: "/big.bin", timeoutMs: 20000 });
      assert.deepEqual(big.body, files["big.bin"]);
      const missing = await client.request({ path: "/nope.bin" });
      assert.equal(missing.status, 404);
    } finally {
      await client.close();
      await gtls.stop();
    }
  },
});
