import assert from "node:assert/strict";
import * as x509 from "@peculiar/x509";
import { createDevPki, issueServerCertificate } from "./pki.ts";

function sans(pem: string): string[] {
  const cert = new x509.X509Certificate(pem);
  const ext = cert.getExtension(x509.SubjectAlternativeNameExtension);
  return ext ? ext.names.items.map((n) => n.value) : [];
}

Deno.test("dev PKI: the server certificate names localhost, 127.0.0.1 and ::1 and chains to the CA", async () => {
  const pki = await createDevPki();
  const names = sans(pki.serverCertPem);
  for (const n of ["localhost", "127.0.0.1"]) assert.ok(names.includes(n), n);
  assert.ok(names.some((n) => n === "::1" || n === "0:0:0:0:0:0:0:1"), "::1");
  const ca = new x509.X509Certificate(pki.caCertPem);
  const server = new x509.X509Certificate(pki.serverCertPem);
  assert.equal(await server.verify({ publicKey: ca.publicKey, signatureOnly: true }), true);
  const other = await createDevPki();
  assert.equal(
    await server.verify({
      publicKey: new x509.X509Certificate(other.caCertPem).publicKey,
      signatureOnly: true,
    }),
    false,
  );
});

Deno.test("an existing CA issues a server certificate for other names", async () => {
  const pki = await createDevPki();
  const leaf = await issueServerCertificate(pki, ["169.254.7.2", "nrf.lab"]);
  assert.deepEqual(sans(leaf.certPem), ["169.254.7.2", "nrf.lab"]);
  const ca = new x509.X509Certificate(pki.caCertPem);
  assert.equal(
    await new x509.X509Certificate(leaf.certPem).verify({
      publicKey: ca.publicKey,
      signatureOnly: true,
    }),
    true,
  );
  await assert.rejects(issueServerCertificate(pki, []), TypeError);
});
