/**
 * The native h2 client's TLS (GnuTLS inside the h2 module): against
 * `openssl s_server` (exporter bytes, mutual TLS) and against a Deno TLS
 * server (rustls: tickets, verification negatives, insecure and serverName).
 */
import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import { createDevPki, issueServerCertificate } from "../pki.ts";
import { TransportError } from "../types.ts";
import { H2_NATIVE_SKIP, OPENSSL_SKIP, rawServer, withPemFiles } from "./_test_util.ts";
import { createNativeH2Client } from "./client.ts";
import { createDenoH2TlsServer } from "../deno/server.ts";
import { TicketCache } from "../ticket_cache.ts";

const ignore = H2_NATIVE_SKIP !== null;
const pki = await createDevPki();
const N32 = "EXPORTER_3GPP_N32_MASTER";
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const PATH = "/nbench/v1/payload?size=64";

/** `openssl s_server` on a free port, its output collected; resolves once it accepts. */
async function sServer(dir: string, extra: string[]) {
  const child = new Deno.Command("openssl", {
    args: [
      "s_server",
      "-accept",
      "0",
      "-naccept",
      "1",
      "-cert",
      `${dir}/server.pem`,
      "-key",
      `${dir}/server-key.pem`,
      "-alpn",
      "h2",
      ...extra,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const port = await (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error("openssl s_server exited before listening");
      text += value;
      const m = text.match(/ACCEPT .*:(\d+)/);
      if (m) return Number(m[1]);
    }
  })();
  const rest = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += value;
    }
  })();
  return {
    port,
    /** Waits until the output matches `re` (bounded). */
    waitFor: async (re: RegExp): Promise<string> => {
      const t0 = Date.now();
      while (!re.test(text)) {
        if (Date.now() - t0 > 10_000) throw new Error(`s_server never printed ${re}:\n${text}`);
        await Promise.race([rest, new Promise((r) => setTimeout(r, 20))]);
      }
      return text;
    },
    close: async () => {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      await child.stdin.close().catch(() => {});
      await rest;
      await child.status;
      child.stderr.cancel().catch(() => {});
    },
  };
}

Deno.test({
  name:
    "native h2-tls client derives the same EXPORTER_3GPP_N32_MASTER bytes as openssl s_server and shows its mTLS subject to it",
  ignore: ignore || OPENSSL_SKIP !== null,
  fn: async () => {
    await withPemFiles(pki, async (dir) => {
      const srv = await sServer(dir, [
        "-Verify",
        "1",
        "-CAfile",
        `${dir}/ca.pem`,
        "-verify_return_error",
        "-keymatexport",
        N32,
        "-keymatexportlen",
        "64",
      ]);
      const client = await createNativeH2Client(`https://localhost:${srv.port}`, {
        tls: { ca: pki.caCertPem, cert: pki.clientCertPem, key: pki.clientKeyPem },
      });
      try {
        const ours = await client.exportKeyingMaterial(N32, undefined, 64);
        const info = await client.tlsInfo();
        const out = await srv.waitFor(/Keying material: [0-9A-Fa-f]+/);
        const theirs = out.match(/Keying material: ([0-9A-Fa-f]+)/)![1].toLowerCase();
        assert.equal(hex(ours), theirs);
        assert.match(out, /subject=.*sbilab client/);
        assert.equal(info.version, "TLS1.3");
        assert.equal(info.alpn, "h2");
        assert.equal(info.peerSubject, "CN=localhost");
        assert.notEqual(
          hex(await client.exportKeyingMaterial("EXPORTER-other", undefined, 64)),
          theirs,
        );
      } finally {
        await client.close();
        await srv.close();
      }
    });
  },
});

Deno.test({
  name:
    "native h2-tls client resumes with the ticket of its previous connection (per origin cache) and gets the same answers",
  ignore,
  fn: async () => {
    const server = await createDenoH2TlsServer(createHandler(), {
      tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    });
    const cache = new TicketCache();
    const open = (ca: string, c = cache) =>
      createNativeH2Client(server.url, { tls: { ca }, ticketCache: c });
    try {
      const first = await open(pki.caCertPem);
      assert.equal((await first.request({ path: PATH })).body.length, 64);
      const full = await first.tlsInfo();
      await first.close();
      assert.equal(full.resumed, false);
      assert.equal(cache.size, 1, "no ticket kept after the first connection");

      const second = await open(pki.caCertPem);
      const r = await second.request({ path: PATH });
      assert.equal(r.status, 200);
      assert.equal(r.body.length, 64);
      const resumed = await second.tlsInfo();
      await second.close();
      assert.equal(resumed.resumed, true, "the second connection did not resume");
      assert.ok(
        resumed.handshakeBytes.received < full.handshakeBytes.received,
        `resumed ${resumed.handshakeBytes.received} B vs full ${full.handshakeBytes.received} B`,
      );

      // a client that trusts something else never sees that ticket
      const other = await createDevPki({ caName: "other CA" });
      const third = await open(`${pki.caCertPem}${other.caCertPem}`);
      await third.request({ path: PATH });
      assert.equal((await third.tlsInfo()).resumed, false);
      await third.close();

      const noResume = await createNativeH2Client(server.url, {
        tls: { ca: pki.caCertPem },
        ticketCache: cache,
        resumption: false,
      });
      await noResume.request({ path: PATH });
      assert.equal((await noResume.tlsInfo()).resumed, false);
      await noResume.close();
    } finally {
      await server.close();
    }
  },
});

Deno.test({
  name:
    "native h2-tls client refuses an expired server certificate in one line, skips verification with insecure, and verifies serverName instead of the URL host",
  ignore,
  fn: async () => {
    const expired = await issueServerCertificate(pki, ["localhost", "127.0.0.1"], {
      days: 1,
      notBefore: new Date(Date.now() - 10 * 86_400_000),
    });
    const old = await createDenoH2TlsServer(createHandler(), {
      tls: { cert: expired.certPem, key: expired.keyPem },
    });
    const named = await createDevPki({ serverNames: ["nrf.example.org"] });
    const nrf = await createDenoH2TlsServer(createHandler(), {
      tls: { cert: named.serverCertPem, key: named.serverKeyPem },
    });
    try {
      const c = await createNativeH2Client(old.url, { tls: { ca: pki.caCertPem } });
      const err = await c.request({ path: PATH }).then(() => undefined, (e: Error) => e);
      await c.close();
      assert.ok(err instanceof TransportError);
      assert.match(err.message, /^h2-tls request to .* failed: TLS handshake failed: .*expired/);
      assert.doesNotMatch(err.message, /\n/);

      const k = await createNativeH2Client(old.url, { tls: { insecure: true } });
      assert.equal((await k.request({ path: PATH })).status, 200);
      await k.close();

      const byName = await createNativeH2Client(nrf.url, {
        tls: { ca: named.caCertPem, serverName: "nrf.example.org" },
      });
      assert.equal((await byName.request({ path: PATH })).status, 200);
      assert.equal((await byName.tlsInfo()).peerSubject, "CN=nrf.example.org");
      await byName.close();
      const byHost = await createNativeH2Client(nrf.url, { tls: { ca: named.caCertPem } });
      await assert.rejects(byHost.request({ path: PATH }), /does not match/);
      await byHost.close();
    } finally {
      await old.close();
      await nrf.close();
    }
  },
});

Deno.test({
  name: "native h2c client has no TLS connection to show",
  ignore,
  fn: async () => {
    const c = await createNativeH2Client("http://127.0.0.1:9");
    try {
      await assert.rejects(c.tlsInfo(), TypeError);
      await assert.rejects(c.exportKeyingMaterial(N32, undefined, 64), TypeError);
    } finally {
      await c.close();
    }
  },
});

Deno.test({
  name:
    "native h2-tls client gives up a handshake the server never answers (one line, after handshakeTimeoutMs) and closes at once while one is pending",
  ignore,
  fn: async () => {
    let arrived = Promise.withResolvers<void>();
    const silent = rawServer(async (c) => {
      arrived.resolve();
      await c.readable.pipeTo(new WritableStream()).catch(() => {}); // read, never answer
    });
    try {
      const url = `https://127.0.0.1:${silent.port}`;
      const c = await createNativeH2Client(url, {
        tls: { ca: pki.caCertPem },
        handshakeTimeoutMs: 300,
      });
      const t0 = performance.now();
      const err = await c.request({ path: PATH, timeoutMs: 5000 }).then(
        () => undefined,
        (e: Error) => e,
      );
      const elapsed = performance.now() - t0;
      assert.ok(err instanceof TransportError, String(err));
      assert.match(
        err.message,
        /^h2-tls request to .* failed: TLS handshake timed out after 300 ms$/,
      );
      assert.ok(elapsed >= 299 && elapsed < 2000, `gave up after ${elapsed.toFixed(0)} ms`);
      await c.close();

      arrived = Promise.withResolvers<void>();
      const pending = await createNativeH2Client(url, { tls: { ca: pki.caCertPem } });
      const req = pending.request({ path: PATH, timeoutMs: 5000 }).catch((e: Error) => e);
      await arrived.promise; // the ClientHello is out
      const c0 = performance.now();
      await pending.close();
      assert.ok(performance.now() - c0 < 1000, "close() waited for the handshake");
      assert.ok((await req) instanceof TransportError);
    } finally {
      await silent.close();
    }
  },
});
