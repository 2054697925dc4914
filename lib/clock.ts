/**
 * How far this machine's clock may be from true time, as its kernel's NTP
 * discipline estimates it (`adjtimex(2)` with no change: the offset still to
 * slew and the estimated error), so a shard's wall-clock window can be judged.
 */
import { libc } from "./libc.ts";

/** The kernel's estimate; `synchronized` false means no NTP daemon disciplines the clock. */
export interface ClockEstimate {
  /** Offset the kernel is still correcting, ms (positive: the clock is behind). */
  offsetMs: number;
  /** Estimated error, ms. */
  errorMs: number;
  /** Maximum error, ms. */
  maxErrorMs: number;
  synchronized: boolean;
  source: "adjtimex";
}

const STA_UNSYNC = 0x0040;
const STA_NANO = 0x2000;

/** The kernel's clock estimate (Linux on a 64-bit CPU), or null where it cannot be read. */
export function clockEstimate(): ClockEstimate | null {
  if (Deno.build.os !== "linux" || !["x86_64", "aarch64"].includes(Deno.build.arch)) return null;
  let sym;
  try {
    sym = libc();
  } catch {
    return null;
  }
  // struct timex: modes (u32, 0 = read only), offset, freq, maxerror, esterror (i64), status (i32)
  const buf = new Uint8Array(208);
  const state = sym.adjtimex(buf);
  if (state < 0) return null;
  const v = new DataView(buf.buffer);
  const status = v.getInt32(40, true);
  const offset = Number(v.getBigInt64(8, true));
  return {
    offsetMs: status & STA_NANO ? offset / 1e6 : offset / 1e3,
    errorMs: Number(v.getBigInt64(32, true)) / 1e3,
    maxErrorMs: Number(v.getBigInt64(24, true)) / 1e3,
    // TIME_ERROR (5) or STA_UNSYNC: nothing disciplines the clock
    synchronized: state !== 5 && (status & STA_UNSYNC) === 0,
    source: "adjtimex",
  };
}
