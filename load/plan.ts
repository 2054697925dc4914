/**
 * A load plan and its binary record for the native engines (layout in
 * load/native/sbl_load.h). The plan is checked here; the engine checks
 * it again and refuses a malformed record.
 */
import { encodeHeaderBlock, type HeaderList } from "../transports/native/wire.ts";

/** Which engine runs the plan. */
export type LoadProtocol = "h2" | "h3";

/** What to send, to where, how much and how fast. */
export interface LoadPlan {
  /** `h2` (h2c, or TLS when `tls`) or `h3`. */
  protocol: LoadProtocol;
  /** The server's IP address (text). */
  host: string;
  /** The server's port. */
  port: number;
  /** Name sent as SNI and verified in the certificate. Default: `host`. */
  serverName?: string;
  /** h2 over TLS (the h3 engine always uses TLS). Default false. */
  tls?: boolean;
  /** Do not verify the server's certificate. Default false. */
  insecure?: boolean;
  /** Trusted CA certificates (PEM). Default: none (verification then fails unless `insecure`). */
  caPem?: Uint8Array;
  /** Client certificate chain (PEM) for mutual TLS; give it with `keyPem`. Default none. */
  certPem?: Uint8Array;
  /** The client certificate's private key (PEM). Default none. */
  keyPem?: Uint8Array;
  /** Request header fields, pseudo-headers first, names lower-case. */
  headers: HeaderList;
  /** Request body. Default empty. */
  body?: Uint8Array;
  /** Measured requests to send (after warm-up); give this or `durationMs`. */
  requests?: number;
  /** How long to send measured requests, in ms; give this or `requests`. */
  durationMs?: number;
  /** Warm-up before measuring, in ms (requests sent then are not counted). Default 0. */
  warmupMs?: number;
  /** Connections. Default 1. */
  connections?: number;
  /** Requests in flight per connection (the cap under an open-loop rate). Default 1. */
  streams?: number;
  /** Worker threads, each with its own share of connections. Default 1. */
  threads?: number;
  /** Open loop: requests per second over all connections. Default 0 (closed loop). */
  rate?: number;
  /** Per-request timeout in ms. Default 10000. */
  timeoutMs?: number;
  /** Connect (and handshake) timeout in ms. Default `timeoutMs`. */
  connectTimeoutMs?: number;
  /** Most requests one connection sends (1: a new connection per request). Default no cap. */
  requestsPerConnection?: number;
}

const MAGIC = 0x504c4253;
const HEAD = 80;
/** Limits the engine enforces too (transports/native/sbl_load.h). */
const MAX_SLOTS = 2 ** 22;
const MAX_TIME_NS = 2n ** 56n;
const FLAG_TLS = 1;
const FLAG_INSECURE = 2;
const MS = 1_000_000n;

function count(value: number | undefined, name: string, fallback: number, max = 100_000): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < 1 || v > max) {
    throw new RangeError(`${name} must be an integer 1-${max}, got ${value}`);
  }
  return v;
}

function ms(value: number | undefined, name: string, fallback: number): bigint {
  const v = value ?? fallback;
  if (!Number.isFinite(v) || v < 0) throw new RangeError(`${name} must be ≥ 0 ms, got ${value}`);
  const ns = BigInt(Math.round(v * 1000)) * MS / 1000n;
  if (ns > MAX_TIME_NS) {
    throw new RangeError(`${name} must be at most ${MAX_TIME_NS / MS} ms, got ${value}`);
  }
  return ns;
}

/** Checks a plan and encodes it; throws `RangeError` naming the first bad field. */
export function encodePlan(plan: LoadPlan): Uint8Array<ArrayBuffer> {
  const hasN = plan.requests !== undefined, hasD = plan.durationMs !== undefined;
  if (hasN === hasD) throw new RangeError("Give either a request count or a duration");
  if (hasN && !(Number.isSafeInteger(plan.requests) && plan.requests! >= 1)) {
    throw new RangeError(`requests must be a positive integer, got ${plan.requests}`);
  }
  if (hasD && !(plan.durationMs! > 0)) {
    throw new RangeError(`duration must be > 0 ms, got ${plan.durationMs}`);
  }
  if (!Number.isInteger(plan.port) || plan.port < 1 || plan.port > 65535) {
    throw new RangeError(`port must be 1-65535, got ${plan.port}`);
  }
  const rate = plan.rate ?? 0;
  if (!(Number.isFinite(rate) && rate >= 0)) throw new RangeError(`rate must be ≥ 0, got ${rate}`);
  const conns = count(plan.connections, "connections", 1);
  const streams = count(plan.streams, "streams", 1);
  if (conns * streams > MAX_SLOTS) {
    throw new RangeError(
      `connections × streams must be at most ${MAX_SLOTS}, got ${conns * streams}`,
    );
  }
  /* a connection's share of the rate must leave its schedule within the engine's time limit */
  const slowest = rate / conns, maxS = Number(MAX_TIME_NS) / 1e9;
  if (rate > 0 && (1 / slowest > maxS || (plan.requests ?? 0) / slowest > maxS)) {
    throw new RangeError(`rate ${rate} is too low: the schedule would outlast ${maxS} s`);
  }
  const threads = Math.min(count(plan.threads, "threads", 1, 64), conns);
  const timeout = ms(plan.timeoutMs, "timeout", 10_000);
  if (timeout === 0n) throw new RangeError("timeout must be > 0 ms");
  if ((plan.certPem === undefined) !== (plan.keyPem === undefined)) {
    throw new RangeError("A client certificate needs its key, and a key its certificate");
  }
  if (plan.certPem && (plan.certPem.length === 0 || plan.keyPem!.length === 0)) {
    throw new RangeError("The client certificate and key must not be empty");
  }
  const enc = new TextEncoder();
  const blobs = [
    enc.encode(plan.host),
    enc.encode(plan.serverName ?? plan.host),
    encodeHeaderBlock(plan.headers),
    plan.body ?? new Uint8Array(0),
    plan.caPem ?? new Uint8Array(0),
    // mutual TLS: two more blobs, or none
    ...(plan.certPem ? [plan.certPem, plan.keyPem!] : []),
  ];
  const len = HEAD + blobs.reduce((n, b) => n + 4 + b.length, 0);
  const out = new Uint8Array(len);
  const v = new DataView(out.buffer);
  v.setUint32(0, MAGIC, true);
  v.setUint32(4, (plan.tls ? FLAG_TLS : 0) | (plan.insecure ? FLAG_INSECURE : 0), true);
  v.setUint32(8, conns, true);
  v.setUint32(12, streams, true);
  v.setUint32(16, threads, true);
  v.setUint32(20, plan.port, true);
  v.setBigUint64(24, BigInt(plan.requests ?? 0), true);
  v.setBigUint64(32, hasD ? ms(plan.durationMs, "duration", 0) : 0n, true);
  v.setBigUint64(40, ms(plan.warmupMs, "warm-up", 0), true);
  v.setBigUint64(48, timeout, true);
  v.setFloat64(56, rate, true);
  v.setBigUint64(64, ms(plan.connectTimeoutMs, "connect timeout", Number(timeout / MS)), true);
  if (plan.requestsPerConnection !== undefined) {
    v.setUint32(
      76,
      count(plan.requestsPerConnection, "requests per connection", 1, 2 ** 32 - 1),
      true,
    );
  }
  let off = HEAD;
  for (const b of blobs) {
    v.setUint32(off, b.length, true);
    out.set(b, off + 4);
    off += 4 + b.length;
  }
  return out;
}
