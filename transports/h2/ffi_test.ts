/**
 * The h2 module's safe wrappers (ffi.ts, server_ffi.ts, tls_ffi.ts) once
 * freed: the calls that need the handle throw `NativeError` `CLOSED` with
 * "<what> is closed", as the h3 wrappers do, and the calls that only tear
 * down or read stay quiet.
 */
import assert from "node:assert/strict";
import { NATIVE_ERR, NativeError } from "../native/errors.ts";
import { EventPoller } from "../native/event_poller.ts";
import { H2_NATIVE_SKIP } from "./_test_util.ts";
import { H2Conn } from "./ffi.ts";
import { loadH2Library } from "./loader.ts";
import { H2_STAT, H2ServerConn, H2ServerLimits } from "./server_ffi.ts";
import type { Sbh2Symbols } from "./symbols.ts";
import { H2Tls, H2TlsConfig } from "./tls_ffi.ts";

const ignore = H2_NATIVE_SKIP !== null;
const sym: Sbh2Symbols = ignore ? undefined! : (await loadH2Library()).symbols;
const noEvent = () => assert.fail("no event");

/** Asserts that `fn` throws the freed-handle error naming `what`. */
function assertFreed(fn: () => unknown, what: string): void {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof NativeError, `${what}: ${e}`);
    assert.equal(e.code, NATIVE_ERR.CLOSED, what);
    assert.equal(e.message, `${what} is closed`);
    return true;
  });
}

function clientTls(): H2TlsConfig {
  return H2TlsConfig.create(
    sym,
    { caPem: [], insecure: true, requireClientCert: false },
    "client",
  );
}

Deno.test({
  name:
    "h2 client session: once closed, recv, send, request, poll and the TLS paths throw CLOSED; cancel, shutdown and the readers stay quiet",
  ignore,
  fn: () => {
    using cfg = clientTls();
    using tls = new H2Tls(sym, cfg, "localhost");
    const conn = new H2Conn(sym);
    const out = new Uint8Array(4096);
    assert.ok(conn.send(out) > 0, "open, the preface and SETTINGS are pending");
    conn.close();
    assert.equal(conn.open, false);
    const what = "HTTP/2 connection";
    assertFreed(() => conn.recv(out, 0), what);
    assertFreed(() => conn.send(out), what);
    assertFreed(() => conn.request(out, 0, undefined), what);
    assertFreed(() => conn.poll(noEvent), what);
    assertFreed(() => conn.recvTls(tls, out, 0), what);
    assertFreed(() => conn.sendTls(tls, out), what);
    conn.cancel(1);
    conn.shutdown();
    assert.equal(conn.errorText(), "");
    assert.equal(conn.streamCount(), 0);
    conn.close();
  },
});

Deno.test({
  name:
    "h2 server session: once closed, its I/O, respond, refuse, poll and tick throw CLOSED; shutdown, stat and errorText stay quiet; freed limits throw too",
  ignore,
  fn: () => {
    const limits = new H2ServerLimits(sym);
    const conn = new H2ServerConn(sym, limits);
    const out = new Uint8Array(4096);
    assert.ok(conn.tick() >= 0, "open, its timers run");
    conn.close();
    assert.equal(conn.open, false);
    const what = "HTTP/2 server connection";
    const poller = new EventPoller();
    assertFreed(() => conn.recv(out, 0), what);
    assertFreed(() => conn.send(out), what);
    assertFreed(() => conn.sendFd(undefined, -1, out), what);
    assertFreed(() => conn.respond(1, out, 0, out, 0), what);
    assertFreed(() => conn.refuse(1), what);
    assertFreed(() => conn.poll(poller, noEvent), what);
    assertFreed(() => conn.tick(), what);
    conn.shutdown();
    assert.equal(conn.stat(H2_STAT.STREAMS), 0);
    assert.equal(conn.errorText(), "");
    conn.close();
    limits.close();
    assertFreed(() => limits.pointer, "HTTP/2 server limits");
    assertFreed(() => new H2ServerConn(sym, limits), "HTTP/2 server limits");
    limits.close();
  },
});

Deno.test({
  name:
    "h2 TLS session and configuration: once closed, pointer, recv and send throw CLOSED; closeNotify and the readers stay quiet",
  ignore,
  fn: () => {
    const cfg = clientTls();
    const tls = new H2Tls(sym, cfg, "localhost");
    const out = new Uint8Array(4096);
    assert.ok(tls.send(undefined, out) > 0, "open, the ClientHello is pending");
    tls.close();
    const what = "TLS session";
    assertFreed(() => tls.pointer, what);
    assertFreed(() => tls.recv(undefined, 0, out), what);
    assertFreed(() => tls.send(undefined, out), what);
    tls.closeNotify();
    assert.equal(tls.state(), 0);
    assert.equal(tls.errorText(), "");
    assert.equal(tls.takeTicket(), undefined);
    tls.close();
    // A server session given a freed TLS session throws for the TLS session.
    using limits = new H2ServerLimits(sym);
    using conn = new H2ServerConn(sym, limits);
    assertFreed(() => conn.recvTls(tls, out as Uint8Array<ArrayBuffer>, 0), what);
    assertFreed(() => conn.sendTls(tls, out as Uint8Array<ArrayBuffer>), what);
    cfg.close();
    assertFreed(() => cfg.pointer, "TLS configuration");
    assertFreed(() => new H2Tls(sym, cfg, "localhost"), "TLS configuration");
    cfg.close();
  },
});
