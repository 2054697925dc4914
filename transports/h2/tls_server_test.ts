/**
 * The native h2 server over TLS (GnuTLS in the module): what it negotiates
 * with our client, the exporter at both ends and against `openssl s_client`,
 * native mutual TLS with the client's subject as `request.peer`, tickets
 * (resumed, foreign, expired), and misbehaving clients.
 */
import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import type { SbiHandler } from "../../handler/types.ts";
import { findTool } from "../../lib/host.ts";
import { createDevPki } from "../pki.ts";
import type { TlsConnection, TlsConnectionInfo, TlsMaterial } from "../tls.ts";
import { TransportError } from "../types.ts";
import {
  FRAME,
  H2_NATIVE_SKIP,
  openNonReading,
  OPENSSL_SKIP,
  sClient,
  sClientMtlsArgs,
  streamBody,
  streamEnded,
  withPemFiles,
} from "./_test_util.ts";
import { createNativeH2Client } from "./client.ts";
import { createNativeH2TlsServer, type NativeH2ServerOptions } from "./server.ts";
import { TicketCache } from "../ticket_cache.ts";
import { until } from "../../tests/support.ts";

const ignore = H2_NATIVE_SKIP !== null;
const pki = await createDevPki();
const N32 = "EXPORTER_3GPP_N32_MASTER";
const PATH = "/nbench/v1/payload?size=64";
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const SERVER_TLS: TlsMaterial = { cert: pki.serverCertPem, key: pki.serverKeyPem };
const MTLS: TlsMaterial = { ...SERVER_TLS, ca: pki.caCertPem, requireClientCert: true };
const CLIENT_CERT: TlsMaterial = {
  ca: pki.caCertPem,
  cert: pki.clientCertPem,
  key: pki.clientKeyPem,
};

/** Answers `/whoami` with the authenticated subject (or "none"), everything else as usual. */
const whoami: SbiHandler = (() => {
  const inner = createHandler();
  return (req) =>
    req.path === "/whoami"
      ? Promise.resolve({
        status: 200,
        headers: { "content-type": "text/plain" },
        body: new TextEncoder().encode(req.peer?.subject ?? "none"),
      })
      : inner(req);
})();

const GNUTLS_CLI_SKIP = findTool("gnutls-cli") ? null : "apt-get install -y gnutls-bin";
if (GNUTLS_CLI_SKIP) console.log(`skipping gnutls-cli interop: ${GNUTLS_CLI_SKIP}`);

/** Resolves like `p`, or rejects after `ms` (a hook that never fires fails the test instead of hanging it). */
function within<T>(p: Promise<T>, ms = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** What the `onTls` hook saw, taken inside the hook (as `lab serve --export` would). */
interface Seen {
  conn: TlsConnection;
  /** EXPORTER_3GPP_N32_MASTER, 64 bytes, hex. */
  n32: string;
  info: TlsConnectionInfo;
}

/** A native TLS server that records its TLS connections and swallowed errors. */
async function server(tls: TlsMaterial, options: NativeH2ServerOptions = {}) {
  const conns: Seen[] = [];
  const errors: string[] = [];
  const waiting: ((c: Seen) => void)[] = [];
  const srv = await createNativeH2TlsServer(whoami, {
    tls,
    ...options,
    onTls: (conn) => {
      const seen = {
        conn,
        n32: hex(conn.exportKeyingMaterial(N32, undefined, 64)),
        info: conn.info(),
      };
      conns.push(seen);
      waiting.shift()?.(seen);
    },
    onError: (e) => errors.push((e as Error).message),
  });
  return {
    srv,
    conns,
    errors,
    nextTls: () => within(new Promise<Seen>((r) => waiting.push(r))),
  };
}

Deno.test({
  name:
    "native h2-tls server and client negotiate TLS 1.3, AES-128-GCM, SECP256R1 and h2, and derive the same exporter bytes",
  ignore,
  fn: async () => {
    const s = await server(SERVER_TLS);
    const c1 = await createNativeH2Client(s.srv.url, { tls: { ca: pki.caCertPem } });
    const c2 = await createNativeH2Client(s.srv.url, {
      tls: { ca: pki.caCertPem },
      resumption: false,
    });
    try {
      assert.equal(s.srv.transport, "h2-tls");
      assert.match(s.srv.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const seen = s.nextTls();
      const r = await c1.request({ path: PATH });
      assert.equal(r.status, 200);
      assert.equal(r.body.length, 64);
      const { conn: sc, n32 } = await seen;
      const ci = await c1.tlsInfo();
      const si = sc.info();
      for (const info of [ci, si]) {
        assert.equal(info.version, "TLS1.3");
        assert.equal(info.cipherSuite, "TLS_AES_128_GCM_SHA256");
        assert.equal(info.group, "SECP256R1");
        assert.equal(info.alpn, "h2");
      }
      assert.equal(ci.peerSubject, "CN=localhost");
      assert.equal(si.peerSubject, undefined);
      assert.equal(sc.remoteAddr.hostname, "127.0.0.1");
      const ck = await c1.exportKeyingMaterial(N32, undefined, 64);
      assert.equal(n32, hex(ck));
      assert.equal(hex(sc.exportKeyingMaterial(N32, undefined, 64)), hex(ck));
      const ctx = new TextEncoder().encode("n32f-context");
      assert.equal(
        hex(sc.exportKeyingMaterial(N32, ctx, 64)),
        hex(await c1.exportKeyingMaterial(N32, ctx, 64)),
      );
      assert.notEqual(hex(sc.exportKeyingMaterial(N32, ctx, 64)), hex(ck));
      assert.notEqual(hex(await c1.exportKeyingMaterial("EXPORTER-other", undefined, 64)), hex(ck));
      const other = await c2.exportKeyingMaterial(N32, undefined, 64);
      assert.notEqual(hex(other), hex(ck), "two connections share keying material");
      await c1.close();
      // the handle outlives the connection, its exporter does not
      await s.srv.close();
      assert.throws(() => sc.exportKeyingMaterial(N32, undefined, 64), RangeError);
    } finally {
      await c1.close();
      await c2.close();
      await s.srv.close();
    }
  },
});

Deno.test({
  name:
    "native h2-tls server with mTLS gives the handler the client's subject (never a header's), refuses a client without a certificate in one line, and keeps serving",
  ignore,
  fn: async () => {
    const s = await server(MTLS);
    const known = await createNativeH2Client(s.srv.url, { tls: CLIENT_CERT });
    const anon = await createNativeH2Client(s.srv.url, {
      tls: { ca: pki.caCertPem },
      timeoutMs: 3000,
    });
    const plain = await server(SERVER_TLS);
    const spoofer = await createNativeH2Client(plain.srv.url, { tls: { ca: pki.caCertPem } });
    try {
      const r = await known.request({ path: "/whoami", headers: { peer: "CN=admin" } });
      assert.equal(new TextDecoder().decode(r.body), "CN=sbilab client");
      const err = await anon.request({ path: "/whoami" }).then(() => undefined, (e: Error) => e);
      assert.ok(err instanceof TransportError, "a client without a certificate got through");
      assert.match(err.message, /failed: TLS (handshake|connection) failed: .*certificate/i);
      assert.doesNotMatch(err.message, /\n/);
      assert.ok(
        s.errors.some((e) =>
          /^h2-tls connection from 127\.0\.0\.1:\d+ failed: TLS handshake failed: /.test(e)
        ),
        s.errors.join("\n"),
      );
      for (const e of s.errors) assert.doesNotMatch(e, /\n/);
      const again = await known.request({ path: PATH });
      assert.equal(again.status, 200);
      // without mTLS there is no peer, whatever the headers say
      const sp = await spoofer.request({
        path: "/whoami",
        headers: { peer: "CN=admin", "x-peer-subject": "CN=admin" },
      });
      assert.equal(new TextDecoder().decode(sp.body), "none");
    } finally {
      await known.close();
      await anon.close();
      await spoofer.close();
      await s.srv.close();
      await plain.srv.close();
    }
  },
});

Deno.test({
  name:
    "native h2-tls server resumes a client's second connection from its ticket (client identity kept); another origin and an expired ticket give full handshakes",
  ignore,
  fn: async () => {
    const s = await server(MTLS, { ticketLifetimeSeconds: 1 });
    const other = await server(MTLS);
    const cache = new TicketCache();
    const connect = async (url: string) => {
      const c = await createNativeH2Client(url, { tls: CLIENT_CERT, ticketCache: cache });
      const r = await c.request({ path: "/whoami" });
      const info = await c.tlsInfo();
      await c.close();
      return { subject: new TextDecoder().decode(r.body), info };
    };
    try {
      const full = await connect(s.srv.url);
      assert.equal(full.info.resumed, false);
      const seen = s.nextTls();
      const resumed = await connect(s.srv.url);
      assert.equal(resumed.info.resumed, true, "the second connection did not resume");
      assert.equal((await seen).info.resumed, true);
      assert.equal(
        resumed.subject,
        "CN=sbilab client",
        "a resumed session lost the client identity",
      );
      assert.ok(
        resumed.info.handshakeBytes.received < full.info.handshakeBytes.received / 2,
        `resumed ${resumed.info.handshakeBytes.received} B vs full ${full.info.handshakeBytes.received} B`,
      );
      // the cache is per origin: the other server gets a full handshake, then its own ticket
      const foreign = await connect(other.srv.url);
      assert.equal(foreign.info.resumed, false);
      assert.equal((await connect(other.srv.url)).info.resumed, true);
      // tickets of the first server live one second
      await connect(s.srv.url);
      await new Promise((r) => setTimeout(r, 2100));
      assert.equal((await connect(s.srv.url)).info.resumed, false, "an expired ticket resumed");
    } finally {
      await s.srv.close();
      await other.srv.close();
    }
  },
});

Deno.test({
  name:
    "openssl s_client prints the same EXPORTER_3GPP_N32_MASTER bytes as the native h2-tls server and resumes with its ticket",
  ignore: ignore || OPENSSL_SKIP !== null,
  fn: async () => {
    const s = await server(MTLS);
    try {
      await withPemFiles(pki, async (dir) => {
        // "ping" is not HTTP/2: the server answers GOAWAY and closes, after its ticket went out
        const run = (extra: string[]) =>
          sClient(s.srv.port, [...sClientMtlsArgs(dir), "-ign_eof", ...extra], "ping\n");
        const seen = s.nextTls();
        const out = await run([
          "-keymatexport",
          N32,
          "-keymatexportlen",
          "64",
          "-sess_out",
          `${dir}/sess.pem`,
        ]);
        const conn = await seen;
        const printed = out.match(/Keying material: ([0-9A-Fa-f]+)/)?.[1];
        assert.ok(printed, out.slice(0, 2000));
        assert.equal(printed.toLowerCase(), conn.n32);
        assert.match(out, /ALPN protocol: h2/);
        assert.equal(conn.info.peerSubject, "CN=sbilab client");
        const again = s.nextTls();
        const out2 = await run(["-sess_in", `${dir}/sess.pem`]);
        assert.match(out2, /Reused, TLSv1\.3/, out2.slice(0, 2000));
        assert.equal((await again).info.resumed, true);
      });
    } finally {
      await s.srv.close();
    }
  },
});

Deno.test({
  name:
    "native h2-tls server survives junk instead of a ClientHello and a client that stops mid-handshake, while serving another client",
  ignore,
  fn: async () => {
    const s = await server(SERVER_TLS, { handshakeTimeoutMs: 300 });
    const good = await createNativeH2Client(s.srv.url, { tls: { ca: pki.caCertPem } });
    const junk = await Deno.connect({ hostname: "127.0.0.1", port: s.srv.port });
    const stuck = await Deno.connect({ hostname: "127.0.0.1", port: s.srv.port });
    try {
      await junk.write(new TextEncoder().encode("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
      // a TLS record header announcing a ClientHello that never comes
      await stuck.write(new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
      assert.equal((await good.request({ path: PATH })).status, 200);
      // both are closed by the server: the junk at once, the stuck one by the settings timer
      const buf = new Uint8Array(1024);
      for (const c of [junk, stuck]) {
        let n: number | null = 0;
        while (n !== null) n = await c.read(buf).catch(() => null);
      }
      assert.ok(s.errors.some((e) => /TLS handshake failed/.test(e)), s.errors.join("\n"));
      assert.equal((await good.request({ path: PATH })).status, 200);
    } finally {
      junk.close();
      stuck.close();
      await good.close();
      await s.srv.close();
    }
  },
});

Deno.test({
  name: "gnutls-cli completes a handshake with the native h2-tls server and resumes its session",
  ignore: ignore || GNUTLS_CLI_SKIP !== null,
  fn: async () => {
    const s = await server(SERVER_TLS);
    try {
      await withPemFiles(pki, async (dir) => {
        const out = await new Deno.Command("gnutls-cli", {
          args: [
            "--x509cafile",
            `${dir}/ca.pem`,
            "--alpn",
            "h2",
            "--resume",
            "-p",
            String(s.srv.port),
            "localhost",
          ],
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
          signal: AbortSignal.timeout(15_000),
        }).output();
        const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
        assert.equal(out.code, 0, text.slice(0, 2000));
        assert.match(text, /\(TLS1\.3-X\.509\)/);
        assert.match(text, /This is a resumed session/);
        await within((async () => {
          while (s.conns.length < 2) await s.nextTls();
        })());
        assert.deepEqual(s.conns.map((c) => c.info.resumed), [false, true], s.errors.join("\n"));
      });
    } finally {
      await s.srv.close();
    }
  },
});

Deno.test({
  name:
    "native h2-tls server sends small responses straight on the socket and the rest of a 16 MiB one through Deno's write to a client that stopped reading, every byte intact once it reads",
  ignore,
  fn: async () => {
    const s = await server(SERVER_TLS, { stallTimeoutMs: 60_000 });
    const good = await createNativeH2Client(s.srv.url, { tls: { ca: pki.caCertPem } });
    const size = 16 * 1024 * 1024;
    const want = (await createHandler()({
      method: "GET",
      path: "/nbench/v1/payload",
      query: new URLSearchParams(`size=${size}`),
      headers: {},
      body: new Uint8Array(0),
    })).body;
    try {
      // (the handshake's own writes are Deno's, and not counted)
      for (let i = 0; i < 3; i++) assert.equal((await good.request({ path: PATH })).status, 200);
      assert.equal(s.srv.fallbackWrites, 0, "a small response waited for Deno's write");
      const raw = await openNonReading(
        s.srv.port,
        `/nbench/v1/payload?size=${size}`,
        pki.caCertPem,
      );
      try {
        await until(() => s.srv.fallbackWrites > 0, "a write through Deno's write", 10_000);
        assert.equal((await good.request({ path: PATH })).status, 200);
        raw.resume();
        await raw.until(() => streamEnded(raw, 1), 20_000);
        assert.equal(raw.closedByServer, false);
        assert.equal(raw.frames.some((f) => f.type === FRAME.RST_STREAM), false);
        const got = streamBody(raw, 1);
        assert.equal(got.length, want.length);
        let diff = -1;
        for (let i = 0; i < got.length && diff < 0; i++) if (got[i] !== want[i]) diff = i;
        assert.equal(diff, -1, "the body differs");
      } finally {
        await raw.close();
      }
      assert.deepEqual(s.errors, []);
    } finally {
      await good.close();
      await s.srv.close();
    }
  },
});
