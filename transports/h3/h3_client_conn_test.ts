import assert from "node:assert/strict";
import { createDevPki } from "../pki.ts";
import { H3ClientConn } from "./h3_client_conn.ts";
import { H3Config } from "./h3_config.ts";
import { H3ServerEndpoint } from "./h3_server_endpoint.ts";
import { loadH3Library } from "./loader.ts";
import { H3_SKIP } from "./_test_util.ts";

const ignore = H3_SKIP !== null;
const N32 = "EXPORTER_3GPP_N32_MASTER";

Deno.test({
  name:
    "h3 connection: before its handshake and once freed, TLS info is null and the exporter throws RangeError",
  ignore,
  fn: async () => {
    const { symbols } = await loadH3Library();
    const pki = await createDevPki();
    using config = new H3Config(symbols, false, { caPem: [pki.caCertPem] });
    const conn = new H3ClientConn(symbols, config, {
      serverName: "localhost",
      localIp: "127.0.0.1",
      localPort: 40000,
      remoteIp: "127.0.0.1",
      remotePort: 40001,
    });
    assert.equal(conn.tlsInfo(), null);
    assert.throws(
      () => conn.exportKeyingMaterial(N32, undefined, 64),
      (e) => e instanceof RangeError && /the handshake has not completed/.test(e.message),
    );
    assert.throws(() => conn.exportKeyingMaterial("", undefined, 64), /label must not be empty/);
    conn.close();
    assert.equal(conn.tlsInfo(), null);
    assert.throws(
      () => conn.exportKeyingMaterial(N32, undefined, 64),
      (e) => e instanceof RangeError && /the connection is closed/.test(e.message),
    );

    using sconfig = new H3Config(symbols, true, {
      certPem: pki.serverCertPem,
      keyPem: pki.serverKeyPem,
    });
    const ep = new H3ServerEndpoint(symbols, sconfig, "127.0.0.1", 40002);
    assert.equal(ep.tlsInfo(7), null, "an unknown connection has no TLS info");
    assert.throws(() => ep.exportKeyingMaterial(7, N32, undefined, 64), RangeError);
    ep.close();
    assert.equal(ep.tlsInfo(7), null);
    assert.throws(
      () => ep.exportKeyingMaterial(7, N32, undefined, 64),
      (e) => e instanceof RangeError && /the connection is closed/.test(e.message),
    );
  },
});
