/** Synthetic flow times shared by the study's tests. */
import { createRng } from "../bench/stats/mod.ts";

/** n log-normal flow times (median `scale`, shape 0.5) from a seeded source (Box–Muller). */
export function logNormal(seed: number, n: number, scale: number): number[] {
  const rng = createRng(seed);
  return Array.from({ length: n }, () => {
    let u = 0;
    while (u === 0) u = rng();
    return scale * Math.exp(0.5 * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng()));
  });
}
