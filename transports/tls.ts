/**
 * TLS material shared by every transport: PEM or DER, in memory or from files.
 * Verification is on by default; mutual TLS is optional.
 */

/** A PEM string, DER bytes, or a file holding either. */
export type CertSource = string | Uint8Array | { path: string };

/** Certificates and keys for a server or a client. */
export interface TlsMaterial {
  /** Own certificate chain (server cert, or client cert for mTLS). */
  cert?: CertSource;
  /** Private key matching `cert` (PKCS#8 PEM or DER). */
  key?: CertSource;
  /** CA certificates to trust (client) or to verify client certs with (server, mTLS). */
  ca?: CertSource | CertSource[];
  /** Server only: require and verify a client certificate. Default false. */
  requireClientCert?: boolean;
  /** Client only: skip server verification (like `curl -k`). Default false. */
  insecure?: boolean;
  /** Client only: name to verify instead of the URL host. */
  serverName?: string;
}

/** TLS material resolved to PEM text, ready for any TLS stack. */
export interface ResolvedTls {
  /** Certificate chain in PEM, or undefined. */
  certPem?: string;
  /** Private key in PEM, or undefined. */
  keyPem?: string;
  /** Trusted CAs in PEM (may be empty). */
  caPem: string[];
  /** See {@linkcode TlsMaterial.requireClientCert}. */
  requireClientCert: boolean;
  /** See {@linkcode TlsMaterial.insecure}. */
  insecure: boolean;
  /** See {@linkcode TlsMaterial.serverName}. */
  serverName?: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function looksLikePem(bytes: Uint8Array): boolean {
  const head = decoder.decode(bytes.subarray(0, 64));
  return head.trimStart().startsWith("-----BEGIN");
}

/** Wraps DER bytes in a PEM block with the given label. */
export function derToPem(der: Uint8Array, label: string): string {
  let bin = "";
  for (const b of der) bin += String.fromCharCode(b);
  const b64 = btoa(bin).replace(/.{64}/g, "$&\n").replace(/\n$/, "");
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

/** Decodes every PEM block with the given label (or any label) into DER bytes. */
export function pemToDer(pem: string, label?: string): Uint8Array[] {
  const out: Uint8Array[] = [];
  const re = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;
  for (const m of pem.matchAll(re)) {
    if (label && m[1] !== label) continue;
    const bin = atob(m[2].replace(/\s+/g, ""));
    out.push(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
  }
  return out;
}

async function readSource(source: CertSource, what: string): Promise<Uint8Array> {
  if (typeof source === "string") return encoder.encode(source);
  if (source instanceof Uint8Array) return source;
  try {
    return await Deno.readFile(source.path);
  } catch (err) {
    throw new TypeError(`Cannot read ${what} file ${source.path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

async function toPem(source: CertSource, label: string, what: string): Promise<string> {
  const bytes = await readSource(source, what);
  if (looksLikePem(bytes)) {
    const text = decoder.decode(bytes);
    if (!/-----END [A-Z0-9 ]+-----/.test(text)) throw new TypeError(`Malformed PEM in ${what}`);
    return text;
  }
  if (bytes.length === 0 || bytes[0] !== 0x30) {
    throw new TypeError(`The ${what} is neither PEM nor DER`);
  }
  return derToPem(bytes, label);
}

/** Reads files and converts DER to PEM; throws `TypeError` on unreadable or malformed input. */
export async function resolveTls(material: TlsMaterial): Promise<ResolvedTls> {
  const cas = material.ca === undefined
    ? []
    : Array.isArray(material.ca)
    ? material.ca
    : [material.ca];
  return {
    certPem: material.cert ? await toPem(material.cert, "CERTIFICATE", "certificate") : undefined,
    keyPem: material.key ? await toPem(material.key, "PRIVATE KEY", "private key") : undefined,
    caPem: await Promise.all(cas.map((c) => toPem(c, "CERTIFICATE", "CA certificate"))),
    requireClientCert: material.requireClientCert ?? false,
    insecure: material.insecure ?? false,
    serverName: material.serverName,
  };
}

/** What one TLS connection negotiated, as the native stack reports it. */
export interface TlsConnectionInfo {
  /** Protocol version, for example `TLS1.3`. */
  version: string;
  /** Cipher suite, for example `TLS_AES_128_GCM_SHA256`. */
  cipherSuite: string;
  /** Key-exchange group, for example `SECP256R1`. */
  group: string;
  /** Negotiated ALPN protocol (`h2` or `h3`). */
  alpn: string;
  /** True when the handshake resumed an earlier session (a ticket was accepted). */
  resumed: boolean;
  /** Subject (RFC 4514) of the peer's certificate: the server's for a client, the client's under mTLS. */
  peerSubject?: string;
  /** Ciphertext bytes of the handshake, each way. */
  handshakeBytes: { sent: number; received: number };
  /** 0-RTT: `accepted` or `rejected` when the client sent early data, else `none`. */
  earlyData?: "none" | "accepted" | "rejected";
}

/** The RFC 5705 / RFC 8446 §7.5 keying-material exporter of one TLS connection. */
export interface KeyingMaterialExporter {
  /**
   * Derives `length` bytes for `label` and `context` (absent and empty are the
   * same in TLS 1.3). Throws `RangeError` once the connection is gone.
   */
  exportKeyingMaterial(label: string, context: Uint8Array | undefined, length: number): Uint8Array;
}

/** One server-side TLS connection, as a server's `onTls` hook sees it. */
export interface TlsConnection extends KeyingMaterialExporter {
  /** The client's address. */
  readonly remoteAddr: { hostname: string; port: number };
  /** What the handshake negotiated (throws `RangeError` once the connection closed). */
  info(): TlsConnectionInfo;
}
