/**
 * Safe wrappers over the TLS record layer of the h2 module (native/sbh2_tls.h):
 * {@linkcode H2TlsConfig} owns a GnuTLS configuration (certificate, trust,
 * verification, tickets) and {@linkcode H2Tls} one TLS session fed with
 * ciphertext by the caller. Both free their handle on `close()`, which is
 * idempotent; sessions keep their configuration alive natively. Once freed,
 * `pointer` and the session's `recv`/`send` throw `NativeError` `CLOSED`, as
 * every wrapper's do; `closeNotify` and the readers stay quiet.
 */
import type { ResolvedTls, TlsConnectionInfo } from "../tls.ts";
import { freedError, NATIVE_ERR, NativeError } from "../native/errors.ts";
import {
  exportKeyingMaterial,
  readPeerSubject,
  readTlsInfo,
  TLS_STATE,
  TLS_VERIFY,
  type TlsSessionCalls,
} from "../native/tls_session.ts";
import type { Sbh2Symbols } from "./symbols.ts";
import { guardedSymbols, type IoLoop } from "../native/io_loop.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Options of {@linkcode H2TlsConfig.create}. */
export interface H2TlsConfigOptions {
  /** Server only: lifetime of TLS 1.3 session tickets in seconds; 0 sends none. Default 0. */
  ticketLifetimeSeconds?: number;
}

/** A client or server TLS configuration. */
export class H2TlsConfig {
  #sym: Sbh2Symbols;
  #ptr: Deno.PointerValue;
  /** True for a server configuration. */
  readonly isServer: boolean;

  private constructor(sym: Sbh2Symbols, ptr: Deno.PointerValue, isServer: boolean) {
    this.#sym = sym;
    this.#ptr = ptr;
    this.isServer = isServer;
  }

  /**
   * Builds a configuration from resolved material: own certificate and key,
   * trusted CAs, verification (client: on unless `insecure`; server: a client
   * certificate is required when `requireClientCert`). Throws `TypeError` on
   * material GnuTLS refuses.
   */
  static create(
    sym: Sbh2Symbols,
    tls: ResolvedTls,
    role: "client" | "server",
    options: H2TlsConfigOptions = {},
  ): H2TlsConfig {
    const isServer = role === "server";
    const ptr = sym.sbh2_tls_config_new(isServer ? 1 : 0);
    if (ptr === null) throw new NativeError(NATIVE_ERR.NOMEM, "Cannot create a TLS configuration");
    const cfg = new H2TlsConfig(sym, ptr, isServer);
    try {
      if (tls.certPem || tls.keyPem) {
        if (!tls.certPem || !tls.keyPem) {
          throw new TypeError("TLS needs both a certificate and a key, or neither");
        }
        const c = encoder.encode(tls.certPem);
        const k = encoder.encode(tls.keyPem);
        if (sym.sbh2_tls_config_set_cert(ptr, c, c.length, k, k.length) < 0) {
          throw new TypeError("The certificate or private key is not usable (PEM, matching pair)");
        }
      }
      for (const pem of tls.caPem) {
        const b = encoder.encode(pem);
        if (sym.sbh2_tls_config_add_ca(ptr, b, b.length) <= 0) {
          throw new TypeError("A CA certificate is not usable");
        }
      }
      if (isServer) {
        if (tls.requireClientCert && tls.caPem.length === 0) {
          throw new TypeError("Mutual TLS needs a CA to verify clients with");
        }
        sym.sbh2_tls_config_set_verify(
          ptr,
          tls.requireClientCert ? TLS_VERIFY.PEER : TLS_VERIFY.NONE,
        );
        const lifetime = options.ticketLifetimeSeconds ?? 0;
        if (!Number.isInteger(lifetime) || lifetime < 0) {
          throw new RangeError(`Ticket lifetime must be a whole number of seconds: ${lifetime}`);
        }
        if (sym.sbh2_tls_config_set_tickets(ptr, lifetime) < 0) {
          throw new NativeError(NATIVE_ERR.TLS, "Cannot enable session tickets");
        }
      } else {
        sym.sbh2_tls_config_set_verify(ptr, tls.insecure ? TLS_VERIFY.NONE : TLS_VERIFY.PEER);
      }
    } catch (err) {
      cfg.close();
      throw err;
    }
    return cfg;
  }

  /** The native handle (for {@linkcode H2Tls}); throws `NativeError` `CLOSED` once closed. */
  get pointer(): Deno.PointerValue {
    if (this.#ptr === null) throw freedError("TLS configuration");
    return this.#ptr;
  }

  /** Releases the configuration; sessions created from it stay valid. Idempotent. */
  close(): void {
    if (this.#ptr !== null) {
      this.#sym.sbh2_tls_config_free(this.#ptr);
      this.#ptr = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** One TLS session: ciphertext in, plaintext out, and the reverse. */
export class H2Tls {
  #sym: Sbh2Symbols;
  #ptr: Deno.PointerValue;
  #text = new Uint8Array(1024);

  /**
   * Starts a session. A client verifies `serverName` (a DNS name or an IP
   * address) and offers `ticket` when given; the ClientHello is then ready
   * for {@linkcode send}.
   */
  constructor(sym: Sbh2Symbols, config: H2TlsConfig, serverName?: string, ticket?: Uint8Array) {
    const cfg = config.pointer;
    this.#sym = sym;
    const name = encoder.encode(`${serverName ?? ""}\0`);
    const t = ticket ?? new Uint8Array(0);
    const ptr = sym.sbh2_tls_new(cfg, name, t as Uint8Array<ArrayBuffer>, t.length);
    if (ptr === null) {
      throw new TypeError(
        config.isServer || serverName
          ? "Cannot start a TLS session"
          : "TLS verification needs a server name",
      );
    }
    this.#ptr = ptr;
  }

  /** The native handle (for the combined HTTP/2 paths); throws `NativeError` `CLOSED` once closed. */
  get pointer(): Deno.PointerValue {
    return this.#live();
  }

  /**
   * From now on every call into the session is made under `loop`'s lock (its
   * thread runs the handshake and the records); freeing stays unguarded.
   */
  guard(loop: IoLoop): void {
    this.#sym = guardedSymbols(this.#sym, loop, /^sbh2_tls_(?!free$)/);
  }

  #live(): Deno.PointerValue {
    if (this.#ptr === null) throw freedError("TLS session");
    return this.#ptr;
  }

  /**
   * Feeds `length` bytes of received ciphertext and writes plaintext into
   * `out`; returns its length, or a negative code (`NATIVE_ERR.TLS`: see
   * {@linkcode errorText}). Call again with no input while it fills `out`.
   */
  recv(data: Uint8Array | undefined, length: number, out: Uint8Array): number {
    const d = data ?? out;
    return this.#sym.sbh2_tls_recv(
      this.#live(),
      d as Uint8Array<ArrayBuffer>,
      data ? length : 0,
      out as Uint8Array<ArrayBuffer>,
      out.length,
    );
  }

  /**
   * Encrypts `plain` (if any) and writes pending ciphertext into `out`;
   * returns its length (0 when nothing is pending) or a negative code.
   */
  send(plain: Uint8Array | undefined, out: Uint8Array): number {
    const p = plain ?? out;
    const n = this.#sym.sbh2_tls_send(
      this.#live(),
      p as Uint8Array<ArrayBuffer>,
      plain ? plain.length : 0,
      out as Uint8Array<ArrayBuffer>,
      out.length,
    );
    return n === NATIVE_ERR.DONE ? 0 : n;
  }

  /** Queues close_notify; drain {@linkcode send} afterwards. */
  closeNotify(): void {
    if (this.#ptr !== null) this.#sym.sbh2_tls_shutdown(this.#ptr);
  }

  /** The {@linkcode TLS_STATE} bits that hold (0 once closed). */
  state(): number {
    return this.#ptr === null ? 0 : this.#sym.sbh2_tls_state(this.#ptr);
  }

  /** True once the handshake completed. */
  get established(): boolean {
    return (this.state() & TLS_STATE.ESTABLISHED) !== 0;
  }

  #calls: TlsSessionCalls = {
    state: () => this.#ptr === null ? -1 : this.#sym.sbh2_tls_state(this.#ptr),
    text: (kind, buf) => this.#sym.sbh2_tls_info(this.#ptr, kind, buf, buf.length),
    handshakeBytes: (sent) => this.#sym.sbh2_tls_handshake_bytes(this.#ptr, sent),
    exporter: (l, c, cLen, out) =>
      this.#sym.sbh2_tls_export(this.#ptr, l, l.length, c, cLen, out, out.length),
  };

  /** What the handshake negotiated; null before it completed or once closed (see `../native/tls_session.ts`). */
  info(): TlsConnectionInfo | null {
    return readTlsInfo(this.#ptr === null ? null : this.#calls);
  }

  /** Subject of the peer's certificate, or undefined when it sent none. */
  peerSubject(): string | undefined {
    return readPeerSubject(this.#ptr === null ? null : this.#calls);
  }

  /**
   * RFC 5705 / RFC 8446 §7.5 exporter: `length` bytes (1 to 65535) for
   * `label` and `context`. Throws `RangeError` before the handshake completed
   * or after close.
   */
  exportKeyingMaterial(label: string, context: Uint8Array | undefined, length: number): Uint8Array {
    return exportKeyingMaterial(this.#ptr === null ? null : this.#calls, label, context, length);
  }

  /** Client: the newest ticket not taken yet, or undefined. */
  takeTicket(): Uint8Array | undefined {
    if (this.#ptr === null || !(this.state() & TLS_STATE.TICKET)) return undefined;
    let buf = new Uint8Array(4096);
    let n = this.#sym.sbh2_tls_ticket(this.#ptr, buf, buf.length);
    if (n === NATIVE_ERR.BUFFER_TOO_SHORT) {
      buf = new Uint8Array(65536);
      n = this.#sym.sbh2_tls_ticket(this.#ptr, buf, buf.length);
    }
    return n > 0 ? buf.slice(0, n) : undefined;
  }

  /** Why the session failed (one line; empty while it has not). */
  errorText(): string {
    if (this.#ptr === null) return "";
    const n = this.#sym.sbh2_tls_error(this.#ptr, this.#text, this.#text.length);
    return n > 0 ? decoder.decode(this.#text.subarray(0, n)) : "";
  }

  /** Frees the session. Idempotent. */
  close(): void {
    if (this.#ptr !== null) {
      this.#sym.sbh2_tls_free(this.#ptr);
      this.#ptr = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
