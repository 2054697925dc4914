import { createDevPki } from "../transports/pki.ts";
import { createHandler } from "../handler/mod.ts";
import { createNativeH2TlsServer } from "../transports/h2/native_server.ts";
import { sClient, sClientMtlsArgs, withPemFiles } from "../transports/h2/_test_util.ts";
const pki = await createDevPki();
const srv = await createNativeH2TlsServer(createHandler(), { tls: { cert: pki.serverCertPem, key: pki.serverKeyPem, ca: pki.caCertPem, requireClientCert: true }, onTls: (c) => console.log("onTls", c.info().resumed), onError: (e) => console.log("err", (e as Error).message) });
await withPemFiles(pki, async (dir) => {
  const t0 = performance.now();
  const out = await sClient(srv.port, [...sClientMtlsArgs(dir), "-ign_eof", "-sess_out", `${dir}/s.pem`], "ping\n");
  console.log("first", (performance.now() - t0).toFixed(0), out.split("\n").filter((l) => /Reused|New,|error|DONE|closed/i.test(l)).join(" | "));
  const out2 = await sClient(srv.port, [...sClientMtlsArgs(dir), "-ign_eof", "-sess_in", `${dir}/s.pem`], "ping\n");
  console.log("second", out2.split("\n").filter((l) => /Reused|New,|error|DONE/i.test(l)).join(" | "));
});
await srv.close();
