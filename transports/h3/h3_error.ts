/**
 * {@linkcode H3Error}: a failure the native HTTP/3 module reported, with its
 * code from the native modules' one enum (`NATIVE_ERR`, transports/native/errors.ts).
 */
import { freedMessage, NATIVE_ERR, NativeError, nativeErrorName } from "../native/errors.ts";

/** A failure reported by the native HTTP/3 shim; `code` is from `NATIVE_ERR`. */
export class H3Error extends NativeError {
  constructor(code: number, message?: string, options?: ErrorOptions) {
    super(code, message ?? `HTTP/3 shim error ${nativeErrorName(code)}`, options);
    this.name = "H3Error";
  }
}

/** Returns `rc` when it is not negative; throws {@linkcode H3Error} naming `what` otherwise. */
export function check(rc: number, what: string): number {
  if (rc < 0) throw new H3Error(rc, `${what} failed: ${nativeErrorName(rc)}`);
  return rc;
}

/** The {@linkcode H3Error} of a call on a freed handle (code `CLOSED`, as every wrapper's). */
export function h3Freed(what: string): H3Error {
  return new H3Error(NATIVE_ERR.CLOSED, freedMessage(what));
}
