/**
 * What a native TLS session negotiated, and its keying-material exporter, read
 * the same way for both modules (h2's TLS record layer and h3's QUIC
 * connections) through the calls each module binds to one session.
 *
 * Before the handshake completes, and once the session is gone, the two
 * behave as follows in both modules:
 * - {@linkcode readTlsInfo} returns `null`: asking what was negotiated is a
 *   question, and "nothing yet" is an answer (the server contract's
 *   `TlsConnection.info()` turns `null` into a `RangeError`);
 * - {@linkcode exportKeyingMaterial} throws `RangeError`: no keying material
 *   exists yet, and returning bytes that are not it would be worse than
 *   failing. Bad arguments are refused first, whatever the session's state.
 */
import type { TlsConnectionInfo } from "../tls.ts";
import { NATIVE_ERR, nativeErrorName } from "./errors.ts";

/** Bits of a session's TLS state (enum sbwire_tls_state), one numbering for both modules. */
export const TLS_STATE = {
  ESTABLISHED: 1,
  RESUMED: 2,
  /** h3: 0-RTT data was accepted. */
  EARLY_ACCEPTED: 4,
  /** Client: a ticket arrived that has not been taken yet. */
  TICKET: 8,
  /** h3 client: 0-RTT was attempted. */
  EARLY_ATTEMPTED: 16,
  /** h2: the peer sent close_notify. */
  PEER_CLOSED: 32,
  /** h2: a fatal TLS error happened. */
  FAILED: 64,
} as const;

/** Peer verification of a TLS configuration (enum sbwire_tls_verify). */
export const TLS_VERIFY = { NONE: 0, PEER: 1 } as const;

/** What a TLS info call writes (enum sbwire_tls_info). */
export const TLS_INFO = { VERSION: 1, SUITE: 2, GROUP: 3, ALPN: 4, PEER_SUBJECT: 5 } as const;

/** Longest exporter output. */
const MAX_EXPORT = 65535;

/** The module calls bound to one TLS session. */
export interface TlsSessionCalls {
  /** The {@linkcode TLS_STATE} bits, or a negative code when the session is unknown. */
  state(): number;
  /** Writes one `sbwire_tls_info` text into `buf`; returns its length. */
  text(kind: number, buf: Uint8Array<ArrayBuffer>): number;
  /** Ciphertext bytes of the handshake, sent (1) or received (0). */
  handshakeBytes(sent: 0 | 1): number;
  /** Writes `out.length` exporter bytes for `label` and the first `contextLength` bytes of `context`. */
  exporter(
    label: Uint8Array<ArrayBuffer>,
    context: Uint8Array<ArrayBuffer>,
    contextLength: number,
    out: Uint8Array<ArrayBuffer>,
  ): number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const EMPTY = new Uint8Array(1);

/** What the session negotiated; `null` before the handshake completed or when the session is gone. */
export function readTlsInfo(calls: TlsSessionCalls | null): TlsConnectionInfo | null {
  const state = calls ? calls.state() : -1;
  if (!calls || state < 0 || !(state & TLS_STATE.ESTABLISHED)) return null;
  const buf = new Uint8Array(1024);
  const get = (kind: number) => {
    const n = calls.text(kind, buf);
    return n > 0 ? decoder.decode(buf.subarray(0, n)) : "";
  };
  const subject = get(TLS_INFO.PEER_SUBJECT);
  return {
    version: get(TLS_INFO.VERSION),
    cipherSuite: get(TLS_INFO.SUITE),
    group: get(TLS_INFO.GROUP),
    alpn: get(TLS_INFO.ALPN),
    resumed: (state & TLS_STATE.RESUMED) !== 0,
    ...(subject ? { peerSubject: subject } : {}),
    handshakeBytes: { sent: calls.handshakeBytes(1), received: calls.handshakeBytes(0) },
    earlyData: state & TLS_STATE.EARLY_ACCEPTED
      ? "accepted"
      : state & TLS_STATE.EARLY_ATTEMPTED
      ? "rejected"
      : "none",
  };
}

/** `info`, or a `RangeError` when it is null: what `TlsConnection.info()` promises. */
export function requireTlsInfo(info: TlsConnectionInfo | null): TlsConnectionInfo {
  if (!info) throw new RangeError("The TLS connection is closed");
  return info;
}

/** The subject of the peer's certificate, or undefined when it sent none or the session is gone. */
export function readPeerSubject(calls: TlsSessionCalls | null): string | undefined {
  if (!calls) return undefined;
  const buf = new Uint8Array(1024);
  const n = calls.text(TLS_INFO.PEER_SUBJECT, buf);
  return n > 0 ? decoder.decode(buf.subarray(0, n)) : undefined;
}

/**
 * RFC 5705 / RFC 8446 §7.5 exporter: `length` bytes (1 to 65535) for `label`
 * (not empty) and `context` (absent and empty are the same). Throws
 * `RangeError` for bad arguments, before the handshake completed, and once the
 * session is gone (`calls` null or the module says CLOSED).
 */
export function exportKeyingMaterial(
  calls: TlsSessionCalls | null,
  label: string,
  context: Uint8Array | undefined,
  length: number,
): Uint8Array {
  if (!Number.isInteger(length) || length < 1 || length > MAX_EXPORT) {
    throw new RangeError(`Exporter length must be 1 to ${MAX_EXPORT} bytes: ${length}`);
  }
  if (label.length === 0) throw new RangeError("Exporter label must not be empty");
  if (!calls) throw new RangeError("Cannot export keying material (the connection is closed)");
  const l = encoder.encode(label);
  const c = (context?.length ? context : EMPTY) as Uint8Array<ArrayBuffer>;
  const out = new Uint8Array(length);
  const n = calls.exporter(l, c, context?.length ?? 0, out);
  if (n !== length) {
    const why = n === NATIVE_ERR.INVALID
      ? "the handshake has not completed"
      : n === NATIVE_ERR.CLOSED
      ? "the connection is closed"
      : nativeErrorName(n);
    throw new RangeError(`Cannot export keying material (${why})`);
  }
  return out;
}
