/**
 * Order statistics every layer asks for: an ascending copy, the type-7
 * quantile and the median. Pure functions that check their input.
 */

function checkSamples(samples: ArrayLike<number>): void {
  if (samples.length < 1) throw new RangeError("quantile needs at least 1 samples, got 0");
  for (let i = 0; i < samples.length; i++) {
    if (!Number.isFinite(samples[i])) {
      throw new RangeError(`quantile got a non-finite sample at index ${i}`);
    }
  }
}

/** Returns an ascending copy of the samples as a Float64Array. */
export function sorted(samples: ArrayLike<number>): Float64Array {
  const a = Float64Array.from(samples as ArrayLike<number>);
  a.sort();
  return a;
}

/** Type-7 quantile of already ascending samples; `p` in [0, 1]. */
export function quantileSorted(asc: ArrayLike<number>, p: number): number {
  checkSamples(asc);
  if (!(p >= 0 && p <= 1)) throw new RangeError(`Quantile ${p} is outside [0, 1]`);
  const h = (asc.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, asc.length - 1);
  return asc[lo] + (h - lo) * (asc[hi] - asc[lo]);
}

/** Type-7 quantile of unsorted samples. */
export function quantile(samples: ArrayLike<number>, p: number): number {
  return quantileSorted(sorted(samples), p);
}

/** Median (type-7 quantile 0.5: the mean of the two middle values for even n). */
export function median(samples: ArrayLike<number>): number {
  return quantile(samples, 0.5);
}
