/**
 * The return codes of both native modules (enum sbwire_error in
 * `transports/native/sbwire.h`): a function returns a count (>= 0) or one of
 * these. `DONE` means "nothing more to do" and is not a failure. The codes
 * marked h3 come only from the HTTP/3 module.
 */

/** Negative return codes of the native modules, one numbering for both. */
export const NATIVE_ERR = {
  /** Nothing more to do right now; not a failure. */
  DONE: -1,
  /** The buffer is too small; a poll wrote the size it needs as u64 at offset 0. */
  BUFFER_TOO_SHORT: -2,
  /** A bad argument or a call in the wrong state. */
  INVALID: -3,
  /** Out of memory. */
  NOMEM: -4,
  /** TLS failed (material, handshake, verification, ALPN, record, alert). */
  TLS: -5,
  /** The peer broke the protocol. */
  PROTO: -6,
  /** The connection is closed or closing. */
  CLOSED: -7,
  /** h3: no stream can be opened, or the send queue is full, yet. */
  STREAM_BLOCKED: -8,
  /** The connection or stream is unknown. */
  NOT_FOUND: -9,
  /** h3: the connection was idle for longer than the idle timeout. */
  IDLE: -10,
  /** The protocol library returned an unexpected error. */
  INTERNAL: -11,
  /** h3: nothing listens at the peer's UDP port. */
  REFUSED: -12,
  /** h3: a socket call failed. */
  SOCKET: -13,
} as const;

const NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(NATIVE_ERR).map(([k, v]) => [v, k]),
);

/** Name of a native return code for messages, e.g. `CLOSED`; the number itself when unknown. */
export function nativeErrorName(code: number): string {
  return NAMES[code] ?? String(code);
}

/**
 * A failure a native module reported (or a call on a wrapper whose handle is
 * freed: `CLOSED`), with its code from {@linkcode NATIVE_ERR}: the one class
 * of shim failures, which callers may catch. Each module's own class (H3Error,
 * H3FramingError) extends it; bad input stays a built-in error.
 */
export class NativeError extends Error {
  /** Negative code from {@linkcode NATIVE_ERR}. */
  readonly code: number;
  constructor(code: number, message?: string, options?: ErrorOptions) {
    super(message ?? `Native module error ${nativeErrorName(code)}`, options);
    this.name = "NativeError";
    this.code = code;
  }
}

/** The message and code every wrapper throws with for a call on a handle it already freed (`CLOSED`). */
export function freedError(what: string): NativeError {
  return new NativeError(NATIVE_ERR.CLOSED, freedMessage(what));
}

/** The message of a call on a freed handle, for a module's own {@linkcode NativeError} subclass. */
export function freedMessage(what: string): string {
  return `${what} is closed`;
}
