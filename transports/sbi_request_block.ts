/**
 * The request header block the native SBI clients (h2 and h3) send, built
 * the way a native client builds it: what does not change on a client
 * (`:scheme` and `:authority`, `user-agent`, `3gpp-sbi-max-rsp-time` for each
 * timeout used, each method) is encoded once and copied in; per request only
 * `:path`, a new `traceparent` (a fresh one as random hex digits written into
 * an encoded template, no string) and the caller's own fields are written, and
 * `3gpp-sbi-sender-timestamp` is re-encoded once per millisecond. The fields
 * and their order are those of {@linkcode sbiRequestHeaders} encoded by
 * `RequestBlockWriter`.
 */
import { decodeHeaderBlock, DROPPED_FIELDS, HeaderBlockWriter } from "./native/wire.ts";
import {
  formatSenderTimestamp,
  nextTraceparent,
  randomHexInto,
  USER_AGENT_PRODUCT,
} from "./sbi_headers.ts";

/** Options for {@linkcode SbiRequestBlock}. */
export interface SbiRequestBlockOptions {
  /** `:scheme`: `http` (h2c) or `https`. Required. */
  scheme: string;
  /** `:authority`, `host:port`. Required. */
  authority: string;
  /** NF type named in `User-Agent`. Default `SMF`. */
  nfType?: string;
  /** Clock in ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

const CACHE_MAX = 64;

/** Writes one client's request header blocks into a buffer it reuses (see the module comment). */
export class SbiRequestBlock {
  #w = new HeaderBlockWriter();
  #scratch = new HeaderBlockWriter();
  #origin: Uint8Array;
  #userAgent: Uint8Array;
  #methods = new Map<string, Uint8Array>();
  #maxRsp = new Map<number, Uint8Array>();
  #stampMs = -1;
  #stamp: Uint8Array = new Uint8Array(0);
  /** `traceparent: 00-<trace id>-<span id>-01` encoded, the ids rewritten per request. */
  #traceparent: Uint8Array;
  #now: () => number;

  constructor(options: SbiRequestBlockOptions) {
    this.#now = options.now ?? Date.now;
    this.#origin = this.#encode(":scheme", options.scheme, ":authority", options.authority);
    this.#userAgent = this.#encode(
      "user-agent",
      `${options.nfType ?? "SMF"}-${USER_AGENT_PRODUCT}`,
    );
    this.#traceparent = this.#encode("traceparent", `00-${"0".repeat(32)}-${"0".repeat(16)}-01`);
  }

  /** A new traceparent with a new trace id (16 random bytes) and span id (8), sampled. */
  #freshTraceparent(): Uint8Array {
    const t = this.#traceparent;
    // the value starts after the two lengths (8 bytes) and the name (11): "00-" then the ids
    const value = 8 + 11;
    randomHexInto(t, value + 3, 16);
    randomHexInto(t, value + 36, 8);
    return t;
  }

  /**
   * The fields of the block written last (its first `length` bytes), as a
   * request's `onRequestHeaders` hook reports them: every field but the
   * pseudo-headers, names lower-case. Decodes only when a hook asks.
   */
  sentHeaders(length: number): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, value] of decodeHeaderBlock(this.buffer.subarray(0, length))) {
      if (!name.startsWith(":")) out[name] = name in out ? `${out[name]}, ${value}` : value;
    }
    return out;
  }

  /** The block written last, in its first `length` bytes (the value {@linkcode encode} returned). */
  get buffer(): Uint8Array<ArrayBuffer> {
    return this.#w.buffer;
  }

  #encode(...fields: string[]): Uint8Array {
    const s = this.#scratch;
    s.reset();
    for (let i = 0; i < fields.length; i += 2) s.field(fields[i], fields[i + 1]);
    return s.buffer.slice(0, s.length);
  }

  #cached<K>(map: Map<K, Uint8Array>, key: K, name: string, value: string): Uint8Array {
    let b = map.get(key);
    if (!b) {
      if (map.size >= CACHE_MAX) map.clear();
      map.set(key, b = this.#encode(name, value));
    }
    return b;
  }

  #senderTimestamp(): Uint8Array {
    const ms = this.#now();
    if (ms !== this.#stampMs) {
      this.#stampMs = ms;
      this.#stamp = this.#encode("3gpp-sbi-sender-timestamp", formatSenderTimestamp(ms));
    }
    return this.#stamp;
  }

  #maxRspTime(timeoutMs: number): Uint8Array {
    return this.#cached(
      this.#maxRsp,
      timeoutMs,
      "3gpp-sbi-max-rsp-time",
      String(Math.max(1, Math.round(timeoutMs))),
    );
  }

  /**
   * Encodes a request's block: pseudo-headers, the caller's `headers` (names
   * lower-cased, connection-specific fields and pseudo-headers dropped), the
   * SBI headers (a caller's `traceparent` keeps its trace id; a caller's
   * `user-agent` or `3gpp-sbi-max-rsp-time` wins), then `content-length` when
   * the body is not empty. Returns the block's length; throws `TypeError` for
   * a field that cannot be sent.
   */
  encode(
    method: string,
    path: string,
    headers: Record<string, string> | undefined,
    timeoutMs: number,
    bodyLength: number,
  ): number {
    const w = this.#w;
    w.reset();
    let m = this.#methods.get(method);
    if (!m) {
      if (this.#methods.size >= CACHE_MAX) this.#methods.clear();
      this.#methods.set(method, m = this.#encode(":method", method.toUpperCase()));
    }
    w.append(m);
    w.append(this.#origin);
    w.field(":path", path);
    let sent = 0; // bit 1: traceparent, 2: timestamp, 4: max-rsp-time, 8: user-agent
    if (headers) {
      let merged: Record<string, string> | undefined;
      for (const k in headers) {
        merged ??= {};
        merged[k.toLowerCase()] = headers[k];
      }
      for (const name in merged) {
        const value = merged[name];
        if (name === "traceparent") {
          w.field(name, nextTraceparent(value));
          sent |= 1;
        } else if (name === "3gpp-sbi-sender-timestamp") {
          w.append(this.#senderTimestamp());
          sent |= 2;
        } else if (DROPPED_FIELDS.has(name) || name.charCodeAt(0) === 0x3a) {
          continue;
        } else if (name === "te" && value.toLowerCase() !== "trailers") {
          continue;
        } else {
          if (name === "3gpp-sbi-max-rsp-time") sent |= 4;
          else if (name === "user-agent") sent |= 8;
          w.field(name, value);
        }
      }
    }
    if (!(sent & 1)) w.append(this.#freshTraceparent());
    if (!(sent & 2)) w.append(this.#senderTimestamp());
    if (!(sent & 4)) w.append(this.#maxRspTime(timeoutMs));
    if (!(sent & 8)) w.append(this.#userAgent);
    if (bodyLength > 0) w.field("content-length", String(bodyLength));
    return w.length;
  }
}
