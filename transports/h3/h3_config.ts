/**
 * {@linkcode H3Config}: the TLS and transport settings (certificates, trust,
 * timeouts, datagram sizes, congestion control, Retry, tickets, 0-RTT, QUIC
 * versions) that the connections made from one configuration share.
 */
import type { Sbh3Symbols } from "./symbols.ts";
import { NATIVE_ERR } from "../native/errors.ts";
import { check, H3Error, h3Freed } from "./h3_error.ts";
import { TLS_VERIFY } from "../native/tls_session.ts";

const encoder = new TextEncoder();

/** Options for {@linkcode H3Config}. */
export interface H3ConfigOptions {
  /** Own certificate chain in PEM. Required on the server, optional (mTLS) on the client. */
  certPem?: string;
  /** Private key in PEM matching `certPem`. */
  keyPem?: string;
  /** Trusted CAs in PEM. Default none. */
  caPem?: string[];
  /** Client: verify the server (default true). Server: require a client cert (default false). */
  verifyPeer?: boolean;
  /** Idle timeout in ms. Default 30000. */
  idleTimeoutMs?: number;
  /** Largest body accepted per stream. Default 64 MiB. */
  maxBodyBytes?: number;
  /** Largest header section accepted per message (name + value + 32 per field), advertised in SETTINGS. Default 16384. */
  maxFieldSectionBytes?: number;
  /**
   * Largest UDP payload sent, for a path MTU the caller knows (1200..65527), used once the
   * peer's max_udp_payload_size is known and never above it. Default: 1200 bytes, then path
   * MTU discovery up to 1444.
   */
  maxUdpPayload?: number;
  /** The max_udp_payload_size advertised to the peer; larger datagrams are dropped. Default 65527. */
  maxRecvUdpPayload?: number;
  /** Congestion controller. Default "host": the kind the host's TCP uses (bbr, reno, else cubic). */
  congestionControl?: H3CongestionControl;
  /** Handshake timeout in ms. Default 5000. */
  handshakeTimeoutMs?: number;
  /**
   * Server: response body bytes held per connection and per endpoint, and how long held bytes
   * may go without an ACK before the connection is closed. Default 64 MiB, 256 MiB, 30000 ms.
   */
  sendQueue?: { connBytes: number; totalBytes: number; stallMs: number };
  /** Server: validate new client addresses with Retry and hand out NEW_TOKEN. Default false. */
  retry?: boolean;
  /** Server: lifetime of session tickets in seconds (one per connection); 0 sends none. Default 0. */
  ticketLifetimeSeconds?: number;
  /** Server: accept 0-RTT; client: attempt it when resuming. Default false. */
  earlyData?: boolean;
  /** Server: anti-replay window for 0-RTT ClientHellos in ms. Default 10000. */
  antiReplayWindowMs?: number;
  /** ECN: mark datagrams as QUIC's validation allows and report the marks received. Default true. */
  ecn?: boolean;
  /** Client: a NEW_TOKEN from an earlier connection to this server, to skip its Retry. Default none. */
  token?: Uint8Array;
  /** QUIC versions by preference, v1 among them (see {@linkcode H3QuicVersion}). Default `["v1"]`. */
  quicVersions?: H3QuicVersion[];
}

/**
 * QUIC versions the module speaks: v1 (RFC 9000) and the provisional v2 draft
 * (0x709a50c4) that ngtcp2 0.12.1 implements. RFC 9369's v2 (0x6b3343cf) is not in that
 * library version.
 */
export type H3QuicVersion = "v1" | "v2draft";

const QUIC_VERSIONS: Record<H3QuicVersion, number> = { v1: 0x1, v2draft: 0x709a50c4 };

/** Congestion controllers of the HTTP/3 module; "host" follows net.ipv4.tcp_congestion_control. */
export type H3CongestionControl = "host" | "reno" | "cubic" | "bbr" | "bbr2";

const CC_CODES: Record<H3CongestionControl, number> = {
  host: 0,
  reno: 1,
  cubic: 2,
  bbr: 3,
  bbr2: 4,
};

/** TLS and transport settings shared by the connections made from it. */
export class H3Config {
  #sym: Sbh3Symbols;
  #ptr: Deno.PointerValue;

  constructor(sym: Sbh3Symbols, isServer: boolean, options: H3ConfigOptions = {}) {
    this.#sym = sym;
    const ptr = sym.sbh3_config_new(isServer ? 1 : 0);
    if (ptr === null) throw new H3Error(NATIVE_ERR.NOMEM, "Cannot create HTTP/3 config");
    this.#ptr = ptr;
    try {
      if (options.certPem && options.keyPem) {
        const c = encoder.encode(options.certPem), k = encoder.encode(options.keyPem);
        const rc = sym.sbh3_config_set_cert(ptr, c, BigInt(c.length), k, BigInt(k.length));
        if (rc < 0) throw new H3Error(rc, "Cannot load the certificate or private key");
      }
      for (const pem of options.caPem ?? []) {
        const b = encoder.encode(pem);
        const rc = sym.sbh3_config_add_ca(ptr, b, BigInt(b.length));
        if (rc < 0) throw new H3Error(rc, "Cannot load a CA certificate");
      }
      if (options.verifyPeer !== undefined) {
        check(
          sym.sbh3_config_set_verify(ptr, options.verifyPeer ? TLS_VERIFY.PEER : TLS_VERIFY.NONE),
          "set_verify",
        );
      }
      if (options.idleTimeoutMs !== undefined) {
        check(sym.sbh3_config_set_idle_timeout(ptr, options.idleTimeoutMs), "set_idle_timeout");
      }
      if (options.maxUdpPayload !== undefined) {
        check(
          sym.sbh3_config_set_max_udp_payload(ptr, options.maxUdpPayload),
          "set_max_udp_payload",
        );
      }
      if (options.maxRecvUdpPayload !== undefined) {
        check(
          sym.sbh3_config_set_max_recv_udp_payload(ptr, options.maxRecvUdpPayload),
          "set_max_recv_udp_payload",
        );
      }
      if (options.congestionControl !== undefined) {
        const code = CC_CODES[options.congestionControl];
        if (code === undefined) {
          throw new TypeError(`Unknown congestion controller "${options.congestionControl}"`);
        }
        check(sym.sbh3_config_set_cc(ptr, code), "set_cc");
      }
      if (options.handshakeTimeoutMs !== undefined) {
        check(
          sym.sbh3_config_set_handshake_timeout(ptr, options.handshakeTimeoutMs),
          "set_handshake_timeout",
        );
      }
      if (options.sendQueue !== undefined) {
        const q = options.sendQueue;
        check(
          sym.sbh3_config_set_send_queue(ptr, BigInt(q.connBytes), BigInt(q.totalBytes), q.stallMs),
          "set_send_queue",
        );
      }
      if (options.retry) check(sym.sbh3_config_set_retry(ptr, 1), "set_retry");
      if (options.ecn === false) check(sym.sbh3_config_set_ecn(ptr, 0), "set_ecn");
      if (options.quicVersions !== undefined) {
        const codes = options.quicVersions.map((v) => {
          const code = QUIC_VERSIONS[v];
          if (code === undefined) throw new TypeError(`Unknown QUIC version "${v}"`);
          return code;
        });
        const list = new Uint32Array(codes);
        const rc = sym.sbh3_config_set_versions(ptr, list, BigInt(list.length));
        if (rc < 0) {
          throw new RangeError(
            `QUIC versions must include v1, got ${options.quicVersions.join(",")}`,
          );
        }
      }
      if (options.token?.length) {
        const t = options.token as Uint8Array<ArrayBuffer>;
        check(sym.sbh3_config_set_token(ptr, t, BigInt(t.length)), "set_token");
      }
      if (options.maxBodyBytes !== undefined) {
        check(sym.sbh3_config_set_max_body(ptr, BigInt(options.maxBodyBytes)), "set_max_body");
      }
      if (options.maxFieldSectionBytes !== undefined) {
        check(
          sym.sbh3_config_set_max_field_section(ptr, BigInt(options.maxFieldSectionBytes)),
          "set_max_field_section",
        );
      }
      if (isServer && options.ticketLifetimeSeconds !== undefined) {
        check(sym.sbh3_config_set_tickets(ptr, options.ticketLifetimeSeconds), "set_tickets");
      }
      if (options.earlyData) {
        check(
          sym.sbh3_config_set_early_data(ptr, 1, options.antiReplayWindowMs ?? 10_000),
          "set_early_data",
        );
      }
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** The explicit send size (`maxUdpPayload`), or 0 when path MTU discovery applies. */
  get maxUdpPayload(): number {
    return check(this.#sym.sbh3_config_get_max_udp_payload(this.pointer), "get_max_udp_payload");
  }

  /** The native handle, for constructors in this folder. */
  get pointer(): Deno.PointerValue {
    if (this.#ptr === null) throw h3Freed("HTTP/3 config");
    return this.#ptr;
  }

  /** Drops this reference; connections made from it keep their own. Idempotent. */
  close(): void {
    if (this.#ptr !== null) {
      this.#sym.sbh3_config_free(this.#ptr);
      this.#ptr = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
