/**
 * `--link SPEC`: named profiles and `key=value` lists describing an emulated
 * link, parsed into a plain {@link LinkSpec} record.
 *
 * Grammar: comma-separated tokens. A token without `=` names a profile and
 * must come first; every other token is `key=value` and is applied in order
 * (later wins), so `wan,loss=1%` is the `wan` profile with 1 % loss.
 *
 * Keys (both directions unless prefixed `up.` client→server or `down.`
 * server→client):
 * - `rtt=50ms`   round-trip time: sets each direction's delay to half
 * - `delay=25ms` one-way delay
 * - `jitter=2ms` one-way jitter, uniform in ±jitter; never reorders packets
 * - `loss=1%`    long-run share of packets lost
 * - `burst=3`    losses come in bursts of 1..N packets (uniform); 1 = independent
 * - `rate=10mbit` bottleneck rate (`bit`, `kbit`, `mbit`, `gbit`)
 * - `queue=25`   drop-tail queue in packets in front of the rate limit
 * - `reorder=1%` share of packets that skip the delay and overtake others
 * - `dup=1%`     share of packets delivered twice
 * Link-wide keys: `blackhole=5s/2s` (forward 5 s, then drop everything 2 s,
 * repeating, as in the QUIC interop runner), `seed=N` (random number seed).
 *
 * @module
 */

/** Impairments of one direction. */
export interface DirectionSpec {
  /** One-way delay in milliseconds. */
  delayMs: number;
  /** Jitter in milliseconds (uniform in ±jitter around the delay). */
  jitterMs: number;
  /** Long-run share of packets lost, in [0, 1). */
  loss: number;
  /** Longest loss burst in packets; 1 means independent losses. */
  burst: number;
  /** Bottleneck rate in bit/s; 0 means unlimited. */
  rateBps: number;
  /** Drop-tail queue limit in packets, used with a rate limit. */
  queue: number;
  /** Share of packets that skip the delay (and so get reordered), in [0, 1]. */
  reorder: number;
  /** Share of packets sent twice, in [0, 1]. */
  dup: number;
}

/** Blackhole windows: forward for `onMs`, then drop everything for `offMs`. */
export interface BlackholeSpec {
  /** Time the link forwards, in milliseconds. */
  onMs: number;
  /** Time the link drops every packet, in milliseconds. */
  offMs: number;
}

/** A parsed `--link` spec. */
export interface LinkSpec {
  /** The text it was parsed from, normalised (no spaces). */
  text: string;
  /** Profile the spec started from, if any. */
  profile?: string;
  /** Client → server direction. */
  up: DirectionSpec;
  /** Server → client direction. */
  down: DirectionSpec;
  /** Blackhole windows, if any. */
  blackhole?: BlackholeSpec;
  /** Random number seed, if given. */
  seed?: number;
}

/** Queue limit when a rate is set without `queue=`. */
export const DEFAULT_QUEUE = 1000;

/** A named link profile: the spec text it stands for and what it models. */
export interface LinkProfile {
  /** The spec the name expands to. */
  spec: string;
  /** What the profile stands for, in a few words. */
  standsFor: string;
}

/** The named profiles, in the order `lab link profiles` lists them. */
export const PROFILES: Readonly<Record<string, LinkProfile>> = {
  lan: { spec: "", standsFor: "no impairment: the relay's own latency only" },
  metro: { spec: "rtt=5ms", standsFor: "NFs in two data centres of one metro area" },
  wan: {
    spec: "rtt=50ms,loss=0.1%",
    standsFor: "a long-haul WAN between regions (e.g. N32 roaming)",
  },
  lossy: {
    spec: "rtt=50ms,loss=2%,burst=3",
    standsFor: "a congested WAN with short loss bursts",
  },
  qir: {
    spec: "delay=15ms,rate=10mbit,queue=25",
    standsFor: "the QUIC interop runner's default link",
  },
  handshakeloss: {
    spec: "delay=15ms,rate=10mbit,queue=25,loss=30%",
    standsFor: "the interop runner's handshake-loss link (its default plus 30 % loss)",
  },
  longrtt: {
    spec: "delay=750ms,rate=10mbit,queue=25",
    standsFor: "the interop runner's long-RTT link (a satellite hop)",
  },
  blackhole: {
    spec: "delay=15ms,rate=10mbit,queue=25,blackhole=5s/2s",
    standsFor: "the interop runner's blackhole link: 5 s forwarding, 2 s dropping",
  },
};

/** The named profiles, each as the spec text it stands for. */
export const LINK_PROFILES: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(PROFILES).map(([name, p]) => [name, p.spec]),
);

function emptyDirection(): DirectionSpec {
  return {
    delayMs: 0,
    jitterMs: 0,
    loss: 0,
    burst: 1,
    rateBps: 0,
    queue: DEFAULT_QUEUE,
    reorder: 0,
    dup: 0,
  };
}

const DURATION_UNITS: Record<string, number> = { us: 0.001, "µs": 0.001, ms: 1, s: 1000 };
const RATE_UNITS: Record<string, number> = { bit: 1, kbit: 1e3, mbit: 1e6, gbit: 1e9 };

/** Parses `50ms`, `750us`, `5s` into milliseconds. */
export function parseDuration(key: string, value: string): number {
  const m = /^(\d+(?:\.\d+)?)(us|µs|ms|s)$/.exec(value);
  if (!m) {
    throw new RangeError(`Bad value for ${key}: "${value}" (expected a duration like 50ms)`);
  }
  return Number(m[1]) * DURATION_UNITS[m[2]];
}

function parseShare(key: string, value: string, max: number): number {
  const m = /^(\d+(?:\.\d+)?)%$/.exec(value);
  const share = m ? Number(m[1]) / 100 : NaN;
  if (!(share >= 0 && share <= max)) {
    const limit = max < 1 ? "below 100%" : "up to 100%";
    throw new RangeError(`Bad value for ${key}: "${value}" (expected a percentage ${limit})`);
  }
  return share;
}

function parseRate(key: string, value: string): number {
  const m = /^(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit)$/i.exec(value);
  const bps = m ? Math.round(Number(m[1]) * RATE_UNITS[m[2].toLowerCase()]) : NaN;
  if (!(bps >= 1000)) {
    throw new RangeError(
      `Bad value for ${key}: "${value}" (expected a rate of at least 1kbit, like 10mbit)`,
    );
  }
  return bps;
}

function parseCount(key: string, value: string, min: number, max: number): number {
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) {
    throw new RangeError(
      `Bad value for ${key}: "${value}" (expected a whole number ${min}..${max})`,
    );
  }
  return n;
}

/** Applies one per-direction key to `d`; returns false for an unknown key. */
function applyDirectionKey(d: DirectionSpec, key: string, name: string, value: string): boolean {
  switch (key) {
    case "delay":
      d.delayMs = parseDuration(name, value);
      return true;
    case "jitter":
      d.jitterMs = parseDuration(name, value);
      return true;
    case "loss":
      d.loss = parseShare(name, value, 0.99);
      return true;
    case "burst":
      d.burst = parseCount(name, value, 1, 1000);
      return true;
    case "rate":
      d.rateBps = parseRate(name, value);
      return true;
    case "queue":
      d.queue = parseCount(name, value, 1, 100000);
      return true;
    case "reorder":
      d.reorder = parseShare(name, value, 1);
      return true;
    case "dup":
      d.dup = parseShare(name, value, 1);
      return true;
  }
  return false;
}

function applyToken(spec: LinkSpec, token: string): void {
  const eq = token.indexOf("=");
  const key = token.slice(0, eq);
  const value = token.slice(eq + 1);
  if (key === "" || value === "") {
    throw new SyntaxError(`Bad link spec token "${token}" (expected key=value)`);
  }
  const dot = key.indexOf(".");
  if (dot >= 0) {
    const side = key.slice(0, dot);
    const sub = key.slice(dot + 1);
    if ((side === "up" || side === "down") && applyDirectionKey(spec[side], sub, key, value)) {
      return;
    }
    throw new RangeError(`Unknown link spec key "${key}"`);
  }
  switch (key) {
    case "rtt": {
      const ms = parseDuration(key, value);
      spec.up.delayMs = ms / 2;
      spec.down.delayMs = ms / 2;
      return;
    }
    case "blackhole": {
      const parts = value.split("/");
      if (parts.length !== 2) {
        throw new RangeError(`Bad value for blackhole: "${value}" (expected on/off like 5s/2s)`);
      }
      const onMs = parseDuration(key, parts[0]);
      const offMs = parseDuration(key, parts[1]);
      if (onMs <= 0) throw new RangeError(`Bad value for blackhole: "${value}" (on time is 0)`);
      spec.blackhole = offMs > 0 ? { onMs, offMs } : undefined;
      return;
    }
    case "seed":
      spec.seed = parseCount(key, value, 0, Number.MAX_SAFE_INTEGER);
      return;
  }
  const inUp = applyDirectionKey(spec.up, key, key, value);
  if (!inUp) throw new RangeError(`Unknown link spec key "${key}"`);
  applyDirectionKey(spec.down, key, key, value);
}

/**
 * Parses a `--link` spec such as `wan`, `lossy,rate=20mbit` or
 * `rtt=50ms,loss=1%,burst=3,rate=10mbit,queue=25,jitter=2ms`.
 *
 * @throws {RangeError} for an unknown profile or key, or a value out of range;
 *   the message names the bad key.
 * @throws {SyntaxError} for a token that is not `key=value`.
 */
export function parseLinkSpec(spec: string): LinkSpec {
  const text = spec.replace(/\s+/g, "");
  if (text === "") throw new SyntaxError("Empty link spec");
  const result: LinkSpec = { text, up: emptyDirection(), down: emptyDirection() };
  const tokens = text.split(",");
  tokens.forEach((token, i) => {
    if (token.includes("=")) return applyToken(result, token);
    if (token === "") throw new SyntaxError(`Empty token in link spec "${text}"`);
    if (i > 0) {
      throw new SyntaxError(`Link profile "${token}" must come first (or use key=value)`);
    }
    if (!Object.hasOwn(LINK_PROFILES, token)) {
      const known = Object.keys(LINK_PROFILES).join(", ");
      throw new RangeError(`Unknown link profile "${token}" (known: ${known})`);
    }
    result.profile = token;
    for (const t of LINK_PROFILES[token].split(",")) if (t) applyToken(result, t);
  });
  return result;
}

/** The configured round-trip time in ms: both one-way delays summed. */
export function configuredRttMs(spec: LinkSpec): number {
  return spec.up.delayMs + spec.down.delayMs;
}

function formatMs(ms: number): string {
  return ms >= 1000 && ms % 1000 === 0 ? `${ms / 1000}s` : `${+ms.toFixed(3)}ms`;
}

function formatRate(bps: number): string {
  for (const [unit, f] of [["gbit", 1e9], ["mbit", 1e6], ["kbit", 1e3]] as const) {
    if (bps >= f) return `${+(bps / f).toFixed(3)}${unit}`;
  }
  return `${bps}bit`;
}

function directionParts(d: DirectionSpec): Map<string, string> {
  const parts = new Map<string, string>();
  if (d.delayMs) parts.set("delay", formatMs(d.delayMs));
  if (d.jitterMs) parts.set("jitter", formatMs(d.jitterMs));
  if (d.loss) parts.set("loss", `${+(d.loss * 100).toFixed(4)}%`);
  if (d.burst > 1) parts.set("burst", String(d.burst));
  if (d.rateBps) {
    parts.set("rate", formatRate(d.rateBps));
    parts.set("queue", String(d.queue));
  }
  if (d.reorder) parts.set("reorder", `${+(d.reorder * 100).toFixed(4)}%`);
  if (d.dup) parts.set("dup", `${+(d.dup * 100).toFixed(4)}%`);
  return parts;
}

/**
 * Describes a spec as a canonical `key=value` list (symmetric keys without
 * prefix, asymmetric ones as `up.`/`down.`); `parseLinkSpec` of the result
 * gives an equal spec. An unimpaired link is `delay=0ms`.
 */
export function formatLinkSpec(spec: LinkSpec): string {
  const up = directionParts(spec.up);
  const down = directionParts(spec.down);
  const out: string[] = [];
  for (const key of new Set([...up.keys(), ...down.keys()])) {
    const u = up.get(key);
    const d = down.get(key);
    if (u === d) out.push(`${key}=${u}`);
    else {
      if (u !== undefined) out.push(`up.${key}=${u}`);
      if (d !== undefined) out.push(`down.${key}=${d}`);
    }
  }
  if (spec.blackhole) {
    out.push(`blackhole=${formatMs(spec.blackhole.onMs)}/${formatMs(spec.blackhole.offMs)}`);
  }
  if (spec.seed !== undefined) out.push(`seed=${spec.seed}`);
  return out.length ? out.join(",") : "delay=0ms";
}
