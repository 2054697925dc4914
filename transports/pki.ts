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

/** The signing half of a CA: its certificate and private key in PEM. */
export interface CaPem {
  /** CA certificate. */
  caCertPem: string;
  /** CA private key (PKCS#8). */
  caKeyPem: string;
}

/** A leaf certificate and its key in PEM. */
export interface LeafPem {
  /** Certificate. */
  certPem: string;
  /** Private key (PKCS#8). */
  keyPem: string;
}

async function issueLeaf(
  ca: { cert: x509.X509Certificate; key: CryptoKey; publicKey: CryptoKey },
  cn: string,
  names: string[],
  usage: string,
  days: number,
  notBefore = new Date(Date.now() - 60_000),
): Promise<LeafPem> {
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${cn}`,
    issuer: ca.cert.subject,
    notBefore,
    notAfter: new Date(notBefore.getTime() + 60_000 + days * 86_400_000),
    publicKey: keys.publicKey,
    signingKey: ca.key,
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
      await x509.AuthorityKeyIdentifierExtension.create(ca.publicKey),
    ],
  });
  return { certPem: cert.toString("pem") + "\n", keyPem: await keyPem(keys.privateKey) };
}

/**
 * Issues a server certificate for `names` (DNS names or IP addresses) from an
 * existing CA, for example a dev PKI read back from disk.
 */
export async function issueServerCertificate(
  ca: CaPem,
  names: string[],
  options: {
    /** Validity in days. Default 30. */
    days?: number;
    /** Start of validity. Default one minute ago (a past date with few days gives an expired certificate). */
    notBefore?: Date;
  } = {},
): Promise<LeafPem> {
  if (names.length === 0) throw new TypeError("A server certificate needs at least one name");
  const cert = new x509.X509Certificate(ca.caCertPem);
  const der = x509.PemConverter.decode(ca.caKeyPem)[0];
  const key = await crypto.subtle.importKey(
    "pkcs8",
    der,
    { name: "ECDSA", namedCurve: "P-256" },
    false,
    [
      "sign",
    ],
  );
  const publicKey = await cert.publicKey.export({ name: "ECDSA", namedCurve: "P-256" }, ["verify"]);
  return issueLeaf(
    { cert, key, publicKey },
    names[0],
    names,
    x509.ExtendedKeyUsage.serverAuth,
    options.days ?? 30,
    options.notBefore,
  );
}

/** Creates a CA, a server and a client certificate in memory. */
export async function createDevPki(options: DevPkiOptions = {}): Promise<DevPki> {
  const days = options.days ?? 30;
  const caKeys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
  const caName = `CN=${options.caName ?? "sbilab dev CA"}`;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: caName,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + days * 86_400_000),
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
  const signer = { cert: ca, key: caKeys.privateKey, publicKey: caKeys.publicKey };
  const serverNames = [
    ...(options.serverNames ?? ["localhost", "127.0.0.1", "::1"]),
    ...(options.extraServerNames ?? []),
  ];
  const server = await issueLeaf(
    signer,
    serverNames[0],
    serverNames,
    x509.ExtendedKeyUsage.serverAuth,
    days,
  );
  const client = await issueLeaf(
    signer,
    "sbilab client",
    [],
    x509.ExtendedKeyUsage.clientAuth,
    days,
  );
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
