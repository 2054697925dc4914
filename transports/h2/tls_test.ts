/**
 * The h2 module's TLS layer on its own (no HTTP/2): a GnuTLS server session
 * behind a loopback echo server, our GnuTLS client session, `openssl
 * s_client`; what they negotiate, the exporter, tickets, mutual TLS and the
 * one-line failures.
 */
import assert from "node:assert/strict";
import { createDevPki, issueServerCertificate } from "../pki.ts";
import { resolveTls, type TlsMaterial } from "../tls.ts";
import { TransportError } from "../types.ts";
import {
  H2_NATIVE_SKIP,
  OPENSSL_SKIP,
  sClient,
  sClientMtlsArgs,
  withPemFiles,
} from "./_test_util.ts";
import { loadH2Library } from "./loader.ts";
import type { Sbh2Symbols } from "./symbols.ts";
import { H2Tls, H2TlsConfig } from "./tls_ffi.ts";
import { TLS_STATE } from "../native/tls_session.ts";
import { flushTls, runTlsHandshake, type TlsPump } from "./tls_handshake.ts";

const ignore = H2_NATIVE_SKIP !== null;
const sym: Sbh2Symbols = ignore ? undefined! : (await loadH2Library()).symbols;
const pki = await createDevPki();
const N32 = "EXPORTER_3GPP_N32_MASTER";
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

/** A pump that keeps decrypted bytes in `sink`. */
function plainPump(tls: H2Tls, sink: Uint8Array[]): TlsPump {
  const buf = new Uint8Array(64 * 1024);
  return {
    recv(data, length) {
      let r = tls.recv(data, length, buf);
      while (r > 0) {
        sink.push(buf.slice(0, r));
        if (r < buf.length) break;
        r = tls.recv(undefined, 0, buf);
      }
      return r < 0 ? r : 0;
    },
    send: (out) => tls.send(undefined, out),
  };
}

async function serverConfig(
  material: TlsMaterial,
  ticketLifetimeSeconds = 3600,
): Promise<H2TlsConfig> {
  return H2TlsConfig.create(sym, await resolveTls(material), "server", { ticketLifetimeSeconds });
}

/** One accepted connection as the echo server saw it. */
interface Accepted {
  tls: H2Tls;
  error?: string;
  done: Promise<void>;
}

/**
 * Loopback TLS echo server on our GnuTLS server session: handshake, then
 * every plaintext chunk goes back; `closeAfterEcho` ends the connection with
 * close_notify after the first echo (what `openssl s_client -ign_eof` waits for).
 */
function echoServer(config: H2TlsConfig, closeAfterEcho = false) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepted: Accepted[] = [];
  const socks = new Set<Deno.TcpConn>();
  const next: ((a: Accepted) => void)[] = [];
  const serve = async (sock: Deno.TcpConn, a: Accepted) => {
    const io = { in: new Uint8Array(65536), out: new Uint8Array(65536) };
    const sink: Uint8Array[] = [];
    const pump = plainPump(a.tls, sink);
    try {
      await runTlsHandshake(sock, a.tls, pump, "echo", io);
      for (;;) {
        for (const chunk of sink.splice(0)) {
          const n = a.tls.send(chunk, io.out);
          if (n > 0) await sock.write(io.out.subarray(0, n));
          if (closeAfterEcho) {
            a.tls.closeNotify();
            await flushTls(sock, pump, io.out);
            return;
          }
        }
        if (a.tls.state() & TLS_STATE.PEER_CLOSED) return;
        const n = await sock.read(io.in);
        if (n === null) return;
        if (pump.recv(io.in, n) < 0) {
          await flushTls(sock, pump, io.out).catch(() => {}); // our alert
          throw new TransportError(a.tls.errorText());
        }
      }
    } catch (err) {
      a.error = (err as Error).message;
    } finally {
      if (socks.delete(sock)) sock.close();
    }
  };
  const accepting = (async () => {
    for await (const sock of listener) {
      socks.add(sock);
      const tls = new H2Tls(sym, config);
      const a: Accepted = { tls, done: Promise.resolve() };
      a.done = serve(sock, a);
      accepted.push(a);
      next.shift()?.(a);
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    accepted,
    /** The next (or the latest unclaimed) accepted connection. */
    nextAccepted: (): Promise<Accepted> => new Promise((resolve) => next.push(resolve)),
    close: async () => {
      listener.close();
      await accepting;
      for (const s of socks) s.close();
      socks.clear();
      await Promise.all(accepted.map((a) => a.done));
      for (const a of accepted) a.tls.close();
    },
  };
}

/** Our client session: handshake, one echo round trip; returns the open session. */
async function dial(
  port: number,
  config: H2TlsConfig,
  options: { serverName?: string; ticket?: Uint8Array } = {},
) {
  const sock = await Deno.connect({ hostname: "127.0.0.1", port });
  const tls = new H2Tls(sym, config, options.serverName ?? "localhost", options.ticket);
  const io = { in: new Uint8Array(65536), out: new Uint8Array(65536) };
  const sink: Uint8Array[] = [];
  const pump = plainPump(tls, sink);
  try {
    await runTlsHandshake(sock, tls, pump, "dial", io);
    const n = tls.send(new TextEncoder().encode("ping"), io.out);
    await sock.write(io.out.subarray(0, n));
    while (sink.reduce((k, c) => k + c.length, 0) < 4) {
      const r = await sock.read(io.in);
      if (r === null) throw new TransportError("closed before the echo");
      if (pump.recv(io.in, r) < 0) throw new TransportError(`dial failed: ${tls.errorText()}`);
    }
  } catch (err) {
    sock.close();
    tls.close();
    throw err;
  }
  return {
    tls,
    echoed: new TextDecoder().decode(sink[0]),
    /** Sends `plain` as one record with its last ciphertext byte flipped; resolves with the reply's fate. */
    tamper: async (plain: Uint8Array): Promise<string> => {
      const n = tls.send(plain, io.out);
      io.out[n - 1] ^= 0xff;
      await sock.write(io.out.subarray(0, n));
      const r = await sock.read(io.in);
      if (r === null) return "closed without an alert";
      return pump.recv(io.in, r) < 0 ? tls.errorText() : "no error";
    },
    close: async () => {
      tls.closeNotify();
      await flushTls(sock, pump, io.out).catch(() => {});
      sock.close();
      tls.close();
    },
  };
}

async function clientConfig(material: TlsMaterial): Promise<H2TlsConfig> {
  return H2TlsConfig.create(sym, await resolveTls(material), "client");
}

Deno.test({
  name:
    "TLS layer: client and server negotiate TLS 1.3, AES-128-GCM, SECP256R1, ALPN h2, and derive identical exporter bytes",
  ignore,
  fn: async () => {
    const scfg = await serverConfig({ cert: pki.serverCertPem, key: pki.serverKeyPem });
    const ccfg = await clientConfig({ ca: pki.caCertPem });
    const srv = echoServer(scfg);
    try {
      const accepted = srv.nextAccepted();
      const c1 = await dial(srv.port, ccfg);
      const s1 = await accepted;
      assert.equal(c1.echoed, "ping");
      for (const info of [c1.tls.info()!, s1.tls.info()!]) {
        assert.equal(info.version, "TLS1.3");
        assert.equal(info.cipherSuite, "TLS_AES_128_GCM_SHA256");
        assert.equal(info.group, "SECP256R1");
        assert.equal(info.alpn, "h2");
        assert.equal(info.resumed, false);
      }
      assert.equal(c1.tls.info()!.peerSubject, "CN=localhost");
      assert.equal(s1.tls.info()!.peerSubject, undefined, "no client certificate was asked for");
      const ck = c1.tls.exportKeyingMaterial(N32, undefined, 64);
      const sk = s1.tls.exportKeyingMaterial(N32, new Uint8Array(0), 64);
      assert.equal(ck.length, 64);
      assert.equal(hex(ck), hex(sk), "client and server exporters differ");
      const other = c1.tls.exportKeyingMaterial("EXPORTER-other", undefined, 64);
      const ctx = c1.tls.exportKeyingMaterial(N32, new Uint8Array([1]), 64);
      assert.notEqual(hex(other), hex(ck));
      assert.notEqual(hex(ctx), hex(ck));
      assert.equal(hex(s1.tls.exportKeyingMaterial(N32, new Uint8Array([1]), 64)), hex(ctx));
      // TLS 1.3 binds the length into the derivation: 32 bytes are not a prefix of 64
      assert.notEqual(
        hex(c1.tls.exportKeyingMaterial(N32, undefined, 32)),
        hex(ck.subarray(0, 32)),
      );
      const c2 = await dial(srv.port, ccfg);
      assert.notEqual(hex(c2.tls.exportKeyingMaterial(N32, undefined, 64)), hex(ck));
      assert.throws(() => c1.tls.exportKeyingMaterial("", undefined, 64), RangeError);
      assert.throws(() => c1.tls.exportKeyingMaterial(N32, undefined, 0), RangeError);
      await c1.close();
      await c2.close();
      assert.throws(() => c1.tls.exportKeyingMaterial(N32, undefined, 64), RangeError);
    } finally {
      await srv.close();
      scfg.close();
      ccfg.close();
    }
  },
});

Deno.test({
  name:
    "TLS layer: a second connection resumes with the first one's ticket and sends fewer handshake bytes; a foreign or expired ticket gives a full handshake",
  ignore,
  fn: async () => {
    const scfg = await serverConfig({ cert: pki.serverCertPem, key: pki.serverKeyPem }, 1);
    const foreign = await serverConfig({ cert: pki.serverCertPem, key: pki.serverKeyPem });
    const ccfg = await clientConfig({ ca: pki.caCertPem });
    const srv = echoServer(scfg);
    const other = echoServer(foreign);
    try {
      const c1 = await dial(srv.port, ccfg);
      const ticket = c1.tls.takeTicket();
      assert.ok(ticket && ticket.length > 0, "no ticket after the first round trip");
      assert.equal(c1.tls.takeTicket(), undefined, "a ticket is handed out once");
      const full = c1.tls.info()!;
      await c1.close();

      const accepted = srv.nextAccepted();
      const c2 = await dial(srv.port, ccfg, { ticket });
      const resumed = c2.tls.info()!;
      assert.equal(resumed.resumed, true, "the second connection did not resume");
      assert.equal((await accepted).tls.info()!.resumed, true);
      assert.ok(
        resumed.handshakeBytes.received < full.handshakeBytes.received / 2,
        `resumed ${resumed.handshakeBytes.received} B vs full ${full.handshakeBytes.received} B`,
      );
      // the ticket carries the identity proven by the full handshake
      assert.equal(resumed.peerSubject, "CN=localhost");
      assert.equal(c2.echoed, "ping");
      const ticket2 = c2.tls.takeTicket();
      await c2.close();

      const c3 = await dial(other.port, ccfg, { ticket: ticket2 });
      assert.equal(c3.tls.info()!.resumed, false, "a ticket from another server was accepted");
      await c3.close();

      // The first server's tickets live one second: wait until this one is older.
      await new Promise((r) => setTimeout(r, 2100));
      const c4 = await dial(srv.port, ccfg, { ticket: ticket2 });
      assert.equal(c4.tls.info()!.resumed, false, "an expired ticket was accepted");
      await c4.close();
    } finally {
      await srv.close();
      await other.close();
      scfg.close();
      foreign.close();
      ccfg.close();
    }
  },
});

Deno.test({
  name:
    "TLS layer: a server requiring client certificates sees the client's subject and refuses a client without one or from another CA, with one-line reasons",
  ignore,
  fn: async () => {
    const stranger = await createDevPki({ caName: "stranger CA" });
    const scfg = await serverConfig({
      cert: pki.serverCertPem,
      key: pki.serverKeyPem,
      ca: pki.caCertPem,
      requireClientCert: true,
    });
    const known = await clientConfig({
      ca: pki.caCertPem,
      cert: pki.clientCertPem,
      key: pki.clientKeyPem,
    });
    const anon = await clientConfig({ ca: pki.caCertPem });
    const foreign = await clientConfig({
      ca: pki.caCertPem,
      cert: stranger.clientCertPem,
      key: stranger.clientKeyPem,
    });
    const srv = echoServer(scfg);
    try {
      const accepted = srv.nextAccepted();
      const c = await dial(srv.port, known);
      assert.equal((await accepted).tls.info()!.peerSubject, "CN=sbilab client");
      await c.close();
      for (
        const [cfg, serverSays] of [
          [anon, /certificate is required/i],
          // GnuTLS sends no certificate whose issuer is not among the CAs the server named
          [foreign, /certificate is required|issuer|not trusted/i],
        ] as const
      ) {
        const a = srv.nextAccepted();
        const err = await dial(srv.port, cfg).then(
          async (d) => (await d.close(), undefined),
          (e: Error) => e,
        );
        assert.ok(err instanceof TransportError, "the client got through");
        // TLS 1.3: the client finishes first and hears the server's verdict as an alert
        assert.match(
          err.message,
          /^dial failed: TLS (handshake|connection) failed: the peer sent the alert "(Certificate is required|Unknown certificate authority|.*)"$/,
        );
        assert.doesNotMatch(err.message, /\n/);
        const s = await a;
        await s.done;
        assert.match(s.error ?? "", /^echo failed: TLS handshake failed: .*/);
        assert.match(s.error ?? "", serverSays);
        assert.doesNotMatch(s.error ?? "", /\n/);
      }
    } finally {
      await srv.close();
      for (const c of [scfg, known, anon, foreign]) c.close();
    }
  },
});

Deno.test({
  name:
    "TLS layer: the client refuses an unknown CA, another host name and an expired certificate with one-line reasons",
  ignore,
  fn: async () => {
    const expired = await issueServerCertificate(pki, ["localhost"], {
      days: 1,
      notBefore: new Date(Date.now() - 10 * 86_400_000),
    });
    const good = await serverConfig({ cert: pki.serverCertPem, key: pki.serverKeyPem });
    const old = await serverConfig({ cert: expired.certPem, key: expired.keyPem });
    const trusting = await clientConfig({ ca: pki.caCertPem });
    const stranger = await createDevPki({ caName: "stranger CA" });
    const distrusting = await clientConfig({ ca: stranger.caCertPem });
    const srv = echoServer(good);
    const oldSrv = echoServer(old);
    try {
      const cases: [number, H2TlsConfig, string, RegExp][] = [
        [srv.port, distrusting, "localhost", /issuer is unknown|not trusted/i],
        [srv.port, trusting, "nrf.example.org", /name in the certificate does not match/i],
        [oldSrv.port, trusting, "localhost", /expired/i],
      ];
      for (const [port, cfg, name, why] of cases) {
        const err = await dial(port, cfg, { serverName: name }).then(
          async (d) => (await d.close(), undefined),
          (e: Error) => e,
        );
        assert.ok(err instanceof TransportError, `${name} got through`);
        assert.match(err.message, /^dial failed: TLS handshake failed: /);
        assert.match(err.message, why);
        assert.doesNotMatch(err.message, /\n/);
      }
      // the same client and server still work together
      const ok = await dial(srv.port, trusting);
      assert.equal(ok.echoed, "ping");
      await ok.close();
    } finally {
      await srv.close();
      await oldSrv.close();
      for (const c of [good, old, trusting, distrusting]) c.close();
    }
  },
});

Deno.test({
  name:
    "TLS layer: openssl s_client prints the same EXPORTER_3GPP_N32_MASTER bytes as our server, presents its certificate under mTLS, and resumes with our ticket",
  ignore: ignore || OPENSSL_SKIP !== null,
  fn: async () => {
    await withPemFiles(pki, async (dir) => {
      const scfg = await serverConfig({
        cert: pki.serverCertPem,
        key: pki.serverKeyPem,
        ca: pki.caCertPem,
        requireClientCert: true,
      });
      const srv = echoServer(scfg, true);
      try {
        const accepted = srv.nextAccepted();
        const out = await sClient(srv.port, [
          ...sClientMtlsArgs(dir),
          "-ign_eof",
          "-keymatexport",
          N32,
          "-keymatexportlen",
          "64",
          "-sess_out",
          `${dir}/session.pem`,
        ], "ping\n");
        const s = await accepted;
        await s.done;
        assert.equal(s.error, undefined, s.error);
        const printed = out.match(/Keying material: ([0-9A-Fa-f]+)/)?.[1];
        assert.ok(printed, `no keying material in:\n${out.slice(0, 2000)}`);
        assert.equal(printed.toLowerCase(), hex(s.tls.exportKeyingMaterial(N32, undefined, 64)));
        assert.match(out, /ALPN protocol: h2/);
        assert.match(out, /Verify return code: 0 \(ok\)/);
        assert.equal(s.tls.info()!.peerSubject, "CN=sbilab client");
        // the client's preference among the shared suites decides (OpenSSL: AES-256-GCM first)
        assert.equal(s.tls.info()!.version, "TLS1.3");
        assert.match(
          s.tls.info()!.cipherSuite,
          /^TLS_(AES_128_GCM_SHA256|AES_256_GCM_SHA384|CHACHA20_POLY1305_SHA256)$/,
        );

        const again = srv.nextAccepted();
        const out2 = await sClient(srv.port, [
          ...sClientMtlsArgs(dir),
          "-ign_eof",
          "-sess_in",
          `${dir}/session.pem`,
        ], "ping\n");
        const s2 = await again;
        await s2.done;
        assert.match(out2, /Reused, TLSv1\.3/, out2.slice(0, 2000));
        assert.equal(s2.tls.info()!.resumed, true);
      } finally {
        await srv.close();
        scfg.close();
      }
    });
  },
});

Deno.test({
  name: "TLS layer: openssl s_client without ALPN h2 is refused with no_application_protocol",
  ignore: ignore || OPENSSL_SKIP !== null,
  fn: async () => {
    await withPemFiles(pki, async (dir) => {
      const scfg = await serverConfig({ cert: pki.serverCertPem, key: pki.serverKeyPem });
      const srv = echoServer(scfg);
      try {
        const accepted = srv.nextAccepted();
        const text = await sClient(srv.port, ["-alpn", "http/1.1", "-CAfile", `${dir}/ca.pem`]);
        assert.match(text, /no application protocol/i);
        const s = await accepted;
        await s.done;
        assert.match(s.error ?? "", /^echo failed: TLS handshake failed: .*ALPN h2/);
      } finally {
        await srv.close();
        scfg.close();
      }
    });
  },
});

Deno.test({
  name: "TLS layer: a tampered record ends the connection with bad_record_mac, told to the sender",
  ignore,
  fn: async () => {
    const scfg = await serverConfig({ cert: pki.serverCertPem, key: pki.serverKeyPem });
    const ccfg = await clientConfig({ ca: pki.caCertPem });
    const srv = echoServer(scfg);
    try {
      const accepted = srv.nextAccepted();
      const c = await dial(srv.port, ccfg);
      const s = await accepted;
      const heard = await c.tamper(new TextEncoder().encode("forged"));
      await s.done;
      assert.match(s.error ?? "", /^TLS connection failed: .*(MAC|decrypt)/i);
      assert.match(heard, /^TLS connection failed: the peer sent the alert "Bad record MAC"$/);
      await c.close();
    } finally {
      await srv.close();
      scfg.close();
      ccfg.close();
    }
  },
});

Deno.test({
  name:
    "h2 TLS session: before its handshake and once closed, info is null and the exporter throws RangeError",
  ignore,
  fn: async () => {
    using cfg = await clientConfig({ ca: pki.caCertPem });
    const tls = new H2Tls(sym, cfg, "localhost");
    assert.equal(tls.info(), null);
    assert.throws(
      () => tls.exportKeyingMaterial(N32, undefined, 64),
      (e) => e instanceof RangeError && /the handshake has not completed/.test(e.message),
    );
    assert.throws(() => tls.exportKeyingMaterial("", undefined, 64), /label must not be empty/);
    tls.close();
    assert.equal(tls.info(), null);
    assert.throws(
      () => tls.exportKeyingMaterial(N32, undefined, 64),
      (e) => e instanceof RangeError && /the connection is closed/.test(e.message),
    );
  },
});
