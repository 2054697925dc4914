/**
 * TLS session resumption and 0-RTT on h3 against independent peers: ngtcp2's
 * example client and server (`gtlsclient`, `gtlsserver`, packages
 * ngtcp2-client / ngtcp2-server), which keep tickets and transport parameters
 * in files and send early data on their own.
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import { createDevPki } from "../transports/pki.ts";
import type { TlsConnection, TlsConnectionInfo } from "../transports/tls.ts";
import { TicketCache } from "../transports/ticket_cache.ts";
import { createNativeH3Client, createNativeH3Server } from "../transports/h3/mod.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import { needsTool, recordingHandler, runTool, startGtlsServer } from "./support.ts";

/** A connection the server accepted, with what its handshake negotiated (read in the hook). */
interface Accepted {
  conn: TlsConnection;
  tls: TlsConnectionInfo;
}

const haveClient = !needsTool("gtlsclient", "ngtcp2-client");
const haveServer = !needsTool("gtlsserver", "ngtcp2-server");

/** Runs gtlsclient once against 127.0.0.1:port with a session and transport-parameter file. */
async function gtlsclient(
  port: number,
  dir: string,
  path: string,
  extra: string[] = [],
): Promise<string> {
  const out = await runTool("gtlsclient", [
    "--exit-on-all-streams-close",
    `--session-file=${dir}/session.pem`,
    `--tp-file=${dir}/tp.txt`,
    ...extra,
    "127.0.0.1",
    String(port),
    `https://localhost:${port}${path}`,
  ]);
  assert.equal(out.code, 0, out.stderr.slice(-2000));
  return out.stderr;
}

Deno.test({
  name:
    "gtlsclient resumes with our h3 server's ticket and its early GET is answered; an early PUT gets 425 and is not run",
  ignore: H3_SKIP !== null || !haveClient,
  fn: async () => {
    const pki = await createDevPki();
    const inner = createHandler();
    const { handler, calls } = recordingHandler(inner);
    const accepted: Accepted[] = [];
    const server = await createNativeH3Server(handler, {
      tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
      onTls: (c) => accepted.push({ conn: c, tls: c.info() }),
    });
    const dir = await Deno.makeTempDir();
    try {
      await gtlsclient(server.port, dir, "/nbench/v1/payload?size=5");
      assert.equal(accepted.length, 1);
      assert.equal(accepted[0].tls.resumed, false);
      const ticket = await Deno.readTextFile(`${dir}/session.pem`);
      assert.match(ticket, /BEGIN GNUTLS SESSION PARAMETERS/, "our server sent a ticket");

      const log = await gtlsclient(server.port, dir, "/nbench/v1/payload?size=6");
      assert.match(log, /type=0RTT/, "gtlsclient sent 0-RTT packets");
      assert.equal(accepted.length, 2);
      assert.equal(accepted[1].tls.resumed, true);
      assert.ok(
        accepted[1].tls.handshakeBytes.sent < accepted[0].tls.handshakeBytes.sent / 2,
        `server sent ${accepted[1].tls.handshakeBytes.sent} B resumed vs ${
          accepted[0].tls.handshakeBytes.sent
        } B full`,
      );
      assert.deepEqual(server.earlyRequests(), { received: 1, tooEarly: 0 });
      assert.match(log, /:status: 200/);

      // A PUT sent in 0-RTT: 425, and the handler never sees it. (gtlsclient cannot set a
      // content-type, so the NRF side of this is in transports/h3/tls_test.ts with a raw client.)
      const id = "0d5c4a52-9a55-4b8e-8a3c-3f5f0c2a6a11";
      const body = JSON.stringify({ nfInstanceId: id, nfType: "AMF", nfStatus: "REGISTERED" });
      await Deno.writeTextFile(`${dir}/put.json`, body);
      const put = ["-m", "PUT", "-d", `${dir}/put.json`];
      const putLog = await gtlsclient(server.port, dir, `/nnrf-nfm/v1/nf-instances/${id}`, put);
      assert.match(putLog, /type=0RTT/);
      assert.match(putLog, /:status: 425/);
      assert.deepEqual(server.earlyRequests(), { received: 2, tooEarly: 1 });
      assert.equal(calls.filter((c) => c.method === "PUT").length, 0);

      // Sent after the handshake instead (resumed, no early data), the handler runs it.
      const lateLog = await gtlsclient(server.port, dir, `/nnrf-nfm/v1/nf-instances/${id}`, [
        ...put,
        "--disable-early-data",
      ]);
      assert.doesNotMatch(lateLog, /:status: 425/);
      assert.equal(accepted.at(-1)!.tls.resumed, true);
      assert.equal(calls.filter((c) => c.method === "PUT").length, 1);
    } finally {
      await server.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "our h3 client resumes with gtlsserver's ticket and its second GET goes in 0-RTT",
  ignore: H3_SKIP !== null || !haveServer,
  fn: async () => {
    const pki = await createDevPki();
    const data = crypto.getRandomValues(new Uint8Array(512));
    const gtls = await startGtlsServer(pki, { "a.bin": data });
    const port = gtls.port;
    const cache = new TicketCache();
    const open = () =>
      createNativeH3Client(`https://127.0.0.1:${port}`, {
        tls: { ca: pki.caCertPem },
        timeoutMs: 500,
        ticketCache: cache,
      });
    try {
      // The server needs a moment to bind; until then a request fails at once (port unreachable).
      let first;
      for (let i = 0; i < 200 && !first; i++) {
        const c = await open();
        const res = await c.request({ path: "/a.bin" }).catch(() => undefined);
        await c.close();
        if (res) first = c;
        else await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(first, "gtlsserver did not answer");
      assert.equal(first.tlsInfo()!.resumed, false);
      assert.equal(cache.size, 1, "gtlsserver sent a ticket");

      const second = await open();
      const res = await second.request({ path: "/a.bin" });
      assert.deepEqual(res.body, data);
      assert.equal(second.tlsInfo()!.resumed, true);
      assert.equal(second.tlsInfo()!.earlyData, "accepted");
      await second.close();
    } finally {
      await gtls.stop();
    }
  },
});
