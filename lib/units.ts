/**
 * Unit formatting for every reporter: durations (stored in nanoseconds),
 * byte sizes, rates and ratios. Every reporter and command formats numbers
 * through this module.
 */

/** Formats a duration given in nanoseconds with three significant digits: `812 ns`, `71.4 µs`, `44.0 ms`, `1.20 s`. */
export function formatDuration(ns: number): string {
  if (!Number.isFinite(ns)) return "–";
  const abs = Math.abs(ns);
  if (abs < 1e3) return `${sig(ns)} ns`;
  if (abs < 1e6) return `${sig(ns / 1e3)} µs`;
  if (abs < 1e9) return `${sig(ns / 1e6)} ms`;
  return `${sig(ns / 1e9)} s`;
}

/** Formats a byte count with binary prefixes: `256 B`, `16 KiB`, `1.5 MiB`. */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return "–";
  const units = ["B", "KiB", "MiB", "GiB"];
  let v = bytes;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number.isInteger(v) ? String(v) : sig(v)} ${units[i]}`;
}

/** Formats a throughput in bytes per second with decimal bits: `940 Mbit/s`. */
export function formatBitRate(bytesPerSecond: number): string {
  if (!Number.isFinite(bytesPerSecond)) return "–";
  const bits = bytesPerSecond * 8;
  if (bits < 1e3) return `${sig(bits)} bit/s`;
  if (bits < 1e6) return `${sig(bits / 1e3)} kbit/s`;
  if (bits < 1e9) return `${sig(bits / 1e6)} Mbit/s`;
  return `${sig(bits / 1e9)} Gbit/s`;
}

/** Formats a request rate: `8.61k req/s`, `412 req/s`. */
export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond)) return "–";
  if (perSecond < 1e3) return `${sig(perSecond)} req/s`;
  if (perSecond < 1e6) return `${sig(perSecond / 1e3)}k req/s`;
  return `${sig(perSecond / 1e6)}M req/s`;
}

/** Formats a ratio as a multiple: `1.32×`. */
export function formatMultiple(ratio: number): string {
  if (!Number.isFinite(ratio)) return "–";
  return `${ratio.toFixed(2)}×`;
}

/** Formats a signed relative change: `+14.2 %`, `-0.5 %`. */
export function formatPercent(fraction: number): string {
  if (!Number.isFinite(fraction)) return "–";
  const p = fraction * 100;
  const sign = p > 0 ? "+" : p < 0 ? "-" : "±";
  return `${sign}${Math.abs(p).toFixed(1)} %`;
}

/** Formats a share (0…1) as an unsigned percentage: `2 %`, `0.1 %`, `0.013 %`. */
export function formatShare(fraction: number): string {
  if (!Number.isFinite(fraction)) return "–";
  return `${+(fraction * 100).toPrecision(2)} %`;
}

/** Parses a size such as `256`, `16K`, `16KiB`, `1M`, `16MiB` into bytes; throws `RangeError` on bad input. */
export function parseSize(text: string): number {
  const m = /^\s*(\d+)\s*(b|k|kb|kib|m|mb|mib)?\s*$/i.exec(text);
  if (!m) throw new RangeError(`Invalid size "${text}" (use e.g. 256, 16K, 1M)`);
  const n = Number(m[1]);
  const unit = (m[2] ?? "b").toLowerCase();
  const mult = unit.startsWith("k") ? 1024 : unit.startsWith("m") ? 1024 * 1024 : 1;
  return n * mult;
}

/** Formats a number with three significant digits and no unit, for a column whose header names it: `812`, `71.4`, `4.08`. */
export function formatSignificant(v: number): string {
  return Number.isFinite(v) ? sig(v) : "–";
}

function sig(v: number): string {
  const abs = Math.abs(v);
  if (abs >= 100) return v.toFixed(0);
  if (abs >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

/** Formats a median with its interval in the median's unit, four significant digits: `101.1 µs [100.9 – 101.3]`. */
export function formatDurationWithInterval(ns: number, lower: number, upper: number): string {
  if (![ns, lower, upper].every(Number.isFinite)) return "–";
  const abs = Math.abs(ns);
  const [div, unit] = abs < 1e3
    ? [1, "ns"]
    : abs < 1e6
    ? [1e3, "µs"]
    : abs < 1e9
    ? [1e6, "ms"]
    : [1e9, "s"];
  const f = (v: number) => {
    const x = v / div;
    const a = Math.abs(x);
    return x.toFixed(a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : 3);
  };
  return `${f(ns)} ${unit} [${f(lower)} – ${f(upper)}]`;
}

/**
 * JavaScript source defining `formatDuration(ns)` for a page that must format
 * durations itself (the HTML report's axes), taken from this module so the
 * page and the reporters format alike.
 */
export function formatDurationSource(): string {
  return `${sig.toString()}\n${formatDuration.toString()}`;
}

/**
 * How long a run took against its time budget, in whole seconds: `took 796 s of a
 * 900 s budget`, or `took 920 s, over its 900 s budget` once the rounded time
 * passes the rounded budget. Every report of a budgeted run says it so.
 */
export function formatBudgetUse(elapsedMs: number, budgetMs: number): string {
  if (!Number.isFinite(elapsedMs) || !Number.isFinite(budgetMs)) return "took –";
  const took = Math.round(elapsedMs / 1000);
  const budget = Math.round(budgetMs / 1000);
  return took > budget
    ? `took ${took} s, over its ${budget} s budget`
    : `took ${took} s of a ${budget} s budget`;
}
