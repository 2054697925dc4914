/**
 * The TLS handshake of one TCP connection, for either side: the module's
 * records go out, the peer's come in, until the session is established.
 * `pump` decides where decrypted bytes go: a combined path feeds them to the
 * HTTP/2 session in the same native call (so bytes that arrive with the last
 * flight are not lost), a plain one keeps them for the caller.
 */
import { TransportError } from "../types.ts";
import { NATIVE_ERR, nativeErrorName } from "../native/errors.ts";
import type { H2Tls } from "./tls_ffi.ts";
import type { WorkGate } from "../work_gate.ts";

/** Moves ciphertext through the TLS session (and whatever sits behind it). */
export interface TlsPump {
  /** Feeds `length` received bytes; returns >= 0, or a negative code (`NATIVE_ERR.TLS` for a TLS failure). */
  recv(data: Uint8Array, length: number): number;
  /** Writes pending ciphertext into `out`; returns its length (0 when none) or a negative code. */
  send(out: Uint8Array): number;
}

/** Writes everything `pump` has pending to `sock`. */
export async function flushTls(sock: Deno.Conn, pump: TlsPump, out: Uint8Array): Promise<void> {
  for (;;) {
    const n = pump.send(out);
    if (n <= 0) return;
    let off = 0;
    while (off < n) off += await sock.write(out.subarray(off, n));
    if (n < out.length) return;
  }
}

/**
 * Runs the handshake to completion; with `io.gate`, each step that processes
 * the peer's records waits for its share of the event loop, and with
 * `io.first`, the first step waits for it too (a server's cap on handshakes
 * at work). Throws `TransportError` whose message is
 * `${label} failed: ` and GnuTLS's one-line reason (our alert, if any, is
 * sent first so the peer learns why).
 */
export async function runTlsHandshake(
  sock: Deno.Conn,
  tls: H2Tls,
  pump: TlsPump,
  label: string,
  io: {
    in: Uint8Array;
    out: Uint8Array;
    gate?: WorkGate;
    /** Awaited once, when the peer's first bytes arrived and before any is processed. */
    first?: () => Promise<void>;
  },
): Promise<void> {
  await flushTls(sock, pump, io.out);
  let first = io.first;
  while (!tls.established) {
    const n = await sock.read(io.in);
    if (n === null) {
      throw new TransportError(
        `${label} failed: the peer closed the connection during the TLS handshake`,
      );
    }
    if (first) {
      await first();
      first = undefined;
    }
    // A server's handshake steps share each turn of the event loop with serving (gate).
    if (io.gate) await io.gate.enter();
    const t0 = io.gate ? performance.now() : 0;
    let rv: number;
    try {
      rv = pump.recv(io.in, n);
    } finally {
      io.gate?.spent(performance.now() - t0);
    }
    if (rv === NATIVE_ERR.TLS) {
      await flushTls(sock, pump, io.out).catch(() => {});
      throw new TransportError(`${label} failed: ${tls.errorText()}`);
    }
    // Past the handshake, a failure of what came behind the last flight (close_notify, bytes
    // that are not HTTP/2) is the session's to report: its GOAWAY goes out with the flush.
    if (rv < 0 && !tls.established) {
      throw new TransportError(`${label} failed: ${nativeErrorName(rv)}`);
    }
    if (tls.established) {
      // The handshake is done even if the peer already left (a write error here, such as a
      // broken pipe while our tickets go out, shows again at the connection's next read).
      await flushTls(sock, pump, io.out).catch(() => {});
      return;
    }
    await flushTls(sock, pump, io.out);
  }
}
