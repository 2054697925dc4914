/**
 * N32 keys of TS 33.501 §13.2.4.4.1, the SEPP-to-SEPP key hierarchy built on
 * the TLS exporter of the N32-c connection:
 *
 * - N32-f master key = TLS exporter (RFC 5705 / RFC 8446 §7.5) with label
 *   `EXPORTER_3GPP_N32_MASTER`, empty context, 64 octets;
 * - N32-KDF(label, L) = HKDF-Expand(master, "N32" || N32-f context ID || label, L)
 *   (RFC 5869, Expand only: the master is already uniformly random), giving
 *   four JWE session keys and four 8-octet IV salts.
 *
 * The context ID enters the KDF as the octets of its text form, the 16 hex
 * digits carried as `n32fContextId` in TS 29.573. Pure functions over
 * WebCrypto's HMAC; no transport code.
 */

/** IANA-registered exporter label of the N32 master key. */
export const N32_MASTER_LABEL = "EXPORTER_3GPP_N32_MASTER";
/** Length of the N32 master key in octets. */
export const N32_MASTER_LENGTH = 64;

/** The N32-f master key of a TLS connection (64 octets); a client's exporter may be async. */
export async function n32MasterKey(conn: {
  exportKeyingMaterial(
    label: string,
    context: Uint8Array | undefined,
    length: number,
  ): Uint8Array | Promise<Uint8Array>;
}): Promise<Uint8Array> {
  return await conn.exportKeyingMaterial(N32_MASTER_LABEL, new Uint8Array(0), N32_MASTER_LENGTH);
}

/** HKDF-Expand (RFC 5869 §2.3) with HMAC over `hash`. Throws `RangeError` when `length` is out of range. */
export async function hkdfExpand(
  prk: Uint8Array,
  info: Uint8Array,
  length: number,
  hash: "SHA-256" | "SHA-384" = "SHA-256",
): Promise<Uint8Array> {
  const hashLen = hash === "SHA-256" ? 32 : 48;
  if (!Number.isInteger(length) || length < 1 || length > 255 * hashLen) {
    throw new RangeError(`HKDF-Expand length must be 1…${255 * hashLen}, got ${length}`);
  }
  if (prk.length < hashLen) {
    throw new RangeError(
      `HKDF-Expand needs a key of at least ${hashLen} octets, got ${prk.length}`,
    );
  }
  const key = await crypto.subtle.importKey(
    "raw",
    prk as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash },
    false,
    ["sign"],
  );
  const out = new Uint8Array(length);
  let t = new Uint8Array(0);
  for (let i = 1, off = 0; off < length; i++) {
    const input = new Uint8Array(t.length + info.length + 1);
    input.set(t, 0);
    input.set(info, t.length);
    input[input.length - 1] = i;
    t = new Uint8Array(await crypto.subtle.sign("HMAC", key, input));
    out.set(t.subarray(0, Math.min(t.length, length - off)), off);
    off += t.length;
  }
  return out;
}

/** N32-KDF(label, L) of TS 33.501 §13.2.4.4.1. */
export async function n32Kdf(
  master: Uint8Array,
  contextId: string,
  label: string,
  length: number,
): Promise<Uint8Array> {
  if (!/^[0-9a-fA-F]{16}$/.test(contextId)) {
    throw new RangeError(`An N32-f context ID is 16 hex digits, got "${contextId}"`);
  }
  const info = new TextEncoder().encode(`N32${contextId}${label}`);
  return await hkdfExpand(master, info, length);
}

/** One direction's JWE key and IV salt. */
export interface N32fKeyPair {
  /** AES-GCM key (16 octets for A128GCM, 32 for A256GCM). */
  key: Uint8Array;
  /** 8-octet IV salt; the nonce is salt || 32-bit sequence counter. */
  ivSalt: Uint8Array;
}

/** The four key/IV-salt pairs of one N32-f context. */
export interface N32fKeys {
  parallelRequest: N32fKeyPair;
  parallelResponse: N32fKeyPair;
  reverseRequest: N32fKeyPair;
  reverseResponse: N32fKeyPair;
}

/**
 * Derives every N32-f session key and IV salt from the master key and a
 * context ID. `cipher` picks the key length: `A128GCM` (16 octets, default)
 * or `A256GCM` (32).
 */
export async function deriveN32fKeys(
  master: Uint8Array,
  contextId: string,
  cipher: "A128GCM" | "A256GCM" = "A128GCM",
): Promise<N32fKeys> {
  const keyLen = cipher === "A256GCM" ? 32 : 16;
  const pair = async (name: string): Promise<N32fKeyPair> => ({
    key: await n32Kdf(master, contextId, `${name}_key`, keyLen),
    ivSalt: await n32Kdf(master, contextId, `${name}_iv_salt`, 8),
  });
  return {
    parallelRequest: await pair("parallel_request"),
    parallelResponse: await pair("parallel_response"),
    reverseRequest: await pair("reverse_request"),
    reverseResponse: await pair("reverse_response"),
  };
}

/** Lower-case hex of `bytes`, the way exporter output and N32 keys are printed. */
export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
