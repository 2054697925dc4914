/**
 * `lab bench --scenario cold`: the set-up table has a row per transport,
 * start (full, resumed, 0-RTT on h3) and phase, every sample started the way
 * its row says, and the phases end in order.
 */
import assert from "node:assert/strict";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import type { BenchRun } from "../bench/record/schema.ts";
import { runLab } from "./support.ts";

Deno.test("lab bench --scenario cold reports full, resumed and 0-RTT starts phase by phase, in order", async () => {
  const dir = await Deno.makeTempDir();
  const transports = H3_SKIP === null ? "h2c,h2-tls,h3" : "h2c,h2-tls"; // H3_SKIP throws in CI
  try {
    const r = await runLab([
      "bench",
      "--scenario",
      "cold",
      "--quick",
      "--samples",
      "5",
      "--transports",
      transports,
      "--json",
      `${dir}/run.json`,
    ], 180_000);
    assert.equal(r.code, 0, r.stderr);
    const run: BenchRun = JSON.parse(await Deno.readTextFile(`${dir}/run.json`));
    const want: Record<string, string[]> = {
      h2c: ["full/connect", "full/first-byte", "full/total"],
      "h2-tls": ["full", "resumed"].flatMap((m) =>
        ["connect", "tls", "first-byte", "total"].map((p) => `${m}/${p}`)
      ),
      h3: ["full", "resumed", "0-rtt"].flatMap((m) =>
        ["connect", "tls", "first-byte", "total"].map((p) => `${m}/${p}`)
      ),
    };
    for (const t of transports.split(",")) {
      const got = run.rows.filter((x) => x.transport === t).map((x) =>
        x.id.slice(x.id.indexOf(`cold/${t}/`) + `cold/${t}/`.length)
      );
      assert.deepEqual(got.sort(), [...want[t]].sort(), `rows of ${t}`);
    }
    // Every sample started as its row says (a resumption that did not happen would be noted).
    assert.ok(!run.notes.some((n) => /did not start that way/.test(n)), run.notes.join("\n"));
    // Within each start the phases end in order, sample by sample: connect, then TLS and the first
    // byte (with 0-RTT the answer may come before the handshake ends), then the whole response.
    for (const t of transports.split(",")) {
      for (const mode of ["full", "resumed", "0-rtt"]) {
        const at = (p: string, i: number) =>
          run.rows.find((x) => x.id.endsWith(`cold/${t}/${mode}/${p}`))?.samples.samples[i];
        const n = run.rows.find((x) => x.id.endsWith(`cold/${t}/${mode}/total`))?.samples.samples
          .length ?? 0;
        for (let i = 0; i < n; i++) {
          const [c, tls, fb, total] = ["connect", "tls", "first-byte", "total"].map((p) =>
            at(p, i)
          );
          const what = `${t} ${mode} sample ${i}: ${[c, tls, fb, total].join(" ")}`;
          assert.ok(c! <= fb! && fb! <= total!, what);
          if (tls !== undefined) assert.ok(c! <= tls, what);
          if (tls !== undefined && mode !== "0-rtt") assert.ok(tls <= fb!, what);
        }
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
