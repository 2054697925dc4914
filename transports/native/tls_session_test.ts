import assert from "node:assert/strict";
import {
  exportKeyingMaterial,
  readPeerSubject,
  readTlsInfo,
  requireTlsInfo,
  TLS_STATE,
  type TlsSessionCalls,
} from "./tls_session.ts";
import { NATIVE_ERR } from "./errors.ts";

/** Calls of a session in `state` whose texts are `texts[kind]` and whose exporter returns `rc` (or fills `out`). */
function fake(state: number, texts: Record<number, string> = {}, rc?: number): TlsSessionCalls {
  return {
    state: () => state,
    text: (kind, buf) => {
      const b = new TextEncoder().encode(texts[kind] ?? "");
      buf.set(b);
      return b.length;
    },
    handshakeBytes: (sent) => (sent ? 1500 : 3000),
    exporter: (_l, _c, _n, out) => {
      out.fill(0xab);
      return rc ?? out.length;
    },
  };
}

Deno.test("TLS info is null before the handshake and once the session is gone", () => {
  assert.equal(readTlsInfo(null), null);
  assert.equal(readTlsInfo(fake(0)), null);
  assert.equal(readTlsInfo(fake(TLS_STATE.TICKET)), null);
  assert.equal(readTlsInfo(fake(NATIVE_ERR.NOT_FOUND)), null);
  assert.throws(() => requireTlsInfo(null), RangeError);
});

Deno.test("TLS info reports the texts, the handshake bytes and the 0-RTT outcome from the state bits", () => {
  const texts = { 1: "TLS1.3", 2: "TLS_AES_128_GCM_SHA256", 3: "SECP256R1", 4: "h3", 5: "CN=c" };
  const st = TLS_STATE.ESTABLISHED | TLS_STATE.RESUMED | TLS_STATE.EARLY_ATTEMPTED;
  assert.deepEqual(readTlsInfo(fake(st, texts)), {
    version: "TLS1.3",
    cipherSuite: "TLS_AES_128_GCM_SHA256",
    group: "SECP256R1",
    alpn: "h3",
    resumed: true,
    peerSubject: "CN=c",
    handshakeBytes: { sent: 1500, received: 3000 },
    earlyData: "rejected",
  });
  const accepted = readTlsInfo(fake(st | TLS_STATE.EARLY_ACCEPTED, texts))!;
  assert.equal(accepted.earlyData, "accepted");
  const plain = readTlsInfo(fake(TLS_STATE.ESTABLISHED, { 4: "h2" }))!;
  assert.equal(plain.resumed, false);
  assert.equal(plain.earlyData, "none");
  assert.equal("peerSubject" in plain, false);
  assert.equal(readPeerSubject(fake(0, { 5: "CN=c" })), "CN=c");
  assert.equal(readPeerSubject(fake(0)), undefined);
});

Deno.test("exporter refuses bad arguments first, then says why the session cannot export", () => {
  const ok = fake(TLS_STATE.ESTABLISHED);
  assert.deepEqual(exportKeyingMaterial(ok, "L", undefined, 3), new Uint8Array([0xab, 0xab, 0xab]));
  for (const calls of [null, ok]) {
    assert.throws(() => exportKeyingMaterial(calls, "", undefined, 8), /label must not be empty/);
    assert.throws(
      () => exportKeyingMaterial(calls, "L", undefined, 0),
      /length must be 1 to 65535/,
    );
    assert.throws(() => exportKeyingMaterial(calls, "L", undefined, 65536), RangeError);
  }
  const msg = (calls: TlsSessionCalls | null) => {
    try {
      exportKeyingMaterial(calls, "L", undefined, 8);
    } catch (err) {
      assert.ok(err instanceof RangeError);
      return err.message;
    }
    assert.fail("no error");
  };
  assert.match(msg(fake(0, {}, NATIVE_ERR.INVALID)), /the handshake has not completed/);
  assert.match(msg(fake(0, {}, NATIVE_ERR.CLOSED)), /the connection is closed/);
  assert.match(msg(null), /the connection is closed/);
  assert.match(msg(fake(0, {}, NATIVE_ERR.NOT_FOUND)), /NOT_FOUND/);
});
