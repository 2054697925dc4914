import assert from "node:assert/strict";
import { ensureBuilt } from "../lib/native_build.ts";
import { buildHistogram, decodePairs, histogramFromPairs, summarize } from "./result.ts";

/** Values across the whole tracked range: a fine geometric sweep plus bucket edges. */
function values(): number[] {
  const out = new Set<number>();
  for (let v = 1; v < 3.6e12; v = Math.ceil(v * 1.0037)) out.add(v);
  for (let b = 0; b < 34; b++) {
    for (const edge of [128, 255, 256]) {
      out.add(edge * 2 ** b);
      out.add(edge * 2 ** b - 1);
    }
  }
  return [...out].filter((v) => v >= 1 && v <= 3.6e12).sort((a, b) => a - b);
}

Deno.test("the engines' histogram has HdrHistogram's layout and ≤ 1 % relative error", async () => {
  const exe = await ensureBuilt("load_histcheck", { quiet: true });
  const vs = values();
  const child = new Deno.Command(exe, { stdin: "piped", stdout: "piped" }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(vs.join("\n") + "\n"));
  await w.close();
  const out = new TextDecoder().decode((await child.output()).stdout).trim().split("\n");
  assert.equal(out.length, vs.length + 1);
  const js = buildHistogram() as unknown as {
    lowestEquivalentValue(v: number): number;
    highestEquivalentValue(v: number): number;
  };
  let worst = 0;
  for (const [i, line] of out.slice(0, -1).entries()) {
    const [v, lowest, reported] = line.split(" ").map(Number);
    assert.equal(v, vs[i]);
    // same bucket as hdr-histogram-js built with the same parameters
    assert.equal(lowest, js.lowestEquivalentValue(v), `bucket of ${v}`);
    assert.equal(reported, js.highestEquivalentValue(v), `reported value of ${v}`);
    worst = Math.max(worst, (reported - v) / v, (v - lowest) / v);
  }
  assert.ok(worst <= 0.01, `worst relative error ${worst}`);
  assert.ok(worst > 0.005, "the sweep reaches the widest buckets");
  assert.equal(out.at(-1), `total ${vs.length} min 1 max ${vs.at(-1)}`);
});

Deno.test("engine histogram pairs merge into hdr-histogram-js with their counts", () => {
  const pairs: [number, number][] = [[1000, 3], [20_000_000, 96], [500_000_000, 1]];
  const bytes = new Uint8Array(pairs.length * 16);
  const v = new DataView(bytes.buffer);
  pairs.forEach(([value, count], i) => {
    v.setBigInt64(i * 16, BigInt(value), true);
    v.setBigUint64(i * 16 + 8, BigInt(count), true);
  });
  assert.deepEqual(decodePairs(bytes), pairs);
  const s = summarize(histogramFromPairs(pairs));
  assert.equal(s.count, 100);
  assert.ok(Math.abs(s.p50 - 20e6) / 20e6 < 0.01, `p50 ${s.p50}`);
  assert.ok(s.max >= 500e6 && s.max < 505e6, `max ${s.max}`);
  assert.ok(s.min >= 1000 && s.min < 1010, `min ${s.min}`);
});
