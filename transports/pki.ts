/**
 * A development PKI built in memory on WebCrypto: one CA, a server
 * certificate (SAN localhost, 127.0.0.1, ::1) and a client certificate for
 * mutual TLS. ECDSA P-256 throughout. No openssl needed.
 */
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(crypto);

/** PEM text of a dev CA and the leaf certificates it signed. */
export interface DevPki {
  /** CA certificate. */
  caCertPem: string;
  /** CA private key (PKCS#8). */
  caKeyPem: string;
  /** Server certificate for localhost, 127.0.0.1 and ::1. */
  serverCertPem: string;
  /** Server private key (PKCS#8). */
  serverKeyPem: string;
  /** Client certificate for mutual TLS. */
  clientCertPem: string;
  /** Client private key (PKCS#8). */
  clientKeyPem: string;
}

/** Options for {@linkcode createDevPki}. */
export interface DevPkiOptions {
  /** DNS names and IP addresses of the server certificate. Default `localhost`, `127.0.0.1`, `::1`. */
  serverNames?: string[];
  /** Extra DNS names or IP addresses for the server certificate. Default none. */
  extraServerNames?: string[];
  /** Validity in days. Default 30. */
  days?: number;
  /** Common name of the CA. Default `sbilab dev CA`. */
  caName?: string;
}

const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

function serial(): string {
  const b = crypto.getRandomValues(new Uint8Array(12));
  b[0] &= 0x7f;
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

async function keyPem(key: CryptoKey): Promise<string> {
  const der = new Uint8Array(await crypto.subtle.exportKey("pkcs8", key));
  return x509.PemConverter.encode(der.buffer, "PRIVATE KEY") + "\n";
}

function isIp(name: string): boolean {
  return /^[0-9.]+$/.test(name) || name.includes(":");
}

/** Creates a CA, a server and a client certificate in memory. */
export async function createDevPki(options: DevPkiOptions = {}): Promise<DevPki> {
  const days = options.days ?? 30;
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + days * 86_400_000);
  const caKeys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
  const caName = `CN=${options.caName ?? "sbilab dev CA"}`;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: caName,
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });

  async function leaf(cn: string, names: string[], usage: string) {
    const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${cn}`,
      issuer: ca.subject,
      notBefore,
      notAfter,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      signingAlgorithm: ALG,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([usage]),
        ...(names.length
          ? [
            new x509.SubjectAlternativeNameExtension(
              names.map((n) => ({ type: isIp(n) ? "ip" as const : "dns" as const, value: n })),
            ),
          ]
          : []),
        await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
      ],
    });
    return { certPem: cert.toString("pem") + "\n", keyPem: await keyPem(keys.privateKey) };
  }

  const server = await leaf(
    options.serverNames?.[0] ?? "localhost",
    [...(options.serverNames ?? ["localhost", "127.0.0.1", "::1"]), ...(options.extraServerNames ?? [])],
    x509.ExtendedKeyUsage.serverAuth,
  );
  const client = await leaf("sbilab client", [], x509.ExtendedKeyUsage.clientAuth);
  return {
    caCertPem: ca.toString("pem") + "\n",
    caKeyPem: await keyPem(caKeys.privateKey),
    serverCertPem: server.certPem,
    serverKeyPem: server.keyPem,
    clientCertPem: client.certPem,
    clientKeyPem: client.keyPem,
  };
}

/** File names {@linkcode writeDevPki} uses inside its folder. */
export const DEV_PKI_FILES = {
  ca: "ca.pem",
  caKey: "ca-key.pem",
  serverCert: "server.pem",
  serverKey: "server-key.pem",
  clientCert: "client.pem",
  clientKey: "client-key.pem",
} as const;

/** Writes a dev PKI as PEM files into `dir` (created if needed; keys mode 0600). */
export async function writeDevPki(dir: string, pki?: DevPki): Promise<DevPki> {
  const p = pki ?? await createDevPki();
  await Deno.mkdir(dir, { recursive: true });
  const write = (name: string, text: string, mode: number) =>
    Deno.writeTextFile(`${dir}/${name}`, text, { mode });
  await write(DEV_PKI_FILES.ca, p.caCertPem, 0o644);
  await write(DEV_PKI_FILES.caKey, p.caKeyPem, 0o600);
  await write(DEV_PKI_FILES.serverCert, p.serverCertPem, 0o644);
  await write(DEV_PKI_FILES.serverKey, p.serverKeyPem, 0o600);
  await write(DEV_PKI_FILES.clientCert, p.clientCertPem, 0o644);
  await write(DEV_PKI_FILES.clientKey, p.clientKeyPem, 0o600);
  return p;
}

/** Reads a dev PKI written by {@linkcode writeDevPki}. */
export async function readDevPki(dir: string): Promise<DevPki> {
  const read = (name: string) => Deno.readTextFile(`${dir}/${name}`);
  return {
    caCertPem: await read(DEV_PKI_FILES.ca),
    caKeyPem: await read(DEV_PKI_FILES.caKey),
    serverCertPem: await read(DEV_PKI_FILES.serverCert),
    serverKeyPem: await read(DEV_PKI_FILES.serverKey),
    clientCertPem: await read(DEV_PKI_FILES.clientCert),
    clientKeyPem: await read(DEV_PKI_FILES.clientKey),
  };
}
