/**
 * `lab bench --target` against a `lab serve` whose h3 listens on a port of
 * its own: the run measures what answers and names h3 as failed, and
 * `--target-h3` gives h3 its URL.
 */
import assert from "node:assert/strict";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import { runLab, startLabServe } from "./support.ts";

Deno.test({
  name:
    "lab bench --target measures h2-TLS and reports h3 failed when h3 is elsewhere, and --target-h3 measures both",
  ignore: H3_SKIP !== null,
  fn: async () => {
    const state = await Deno.makeTempDir();
    const srv = await startLabServe({ transports: ["h2-tls", "h3"], stateDir: state });
    const urls = srv.urls as Record<string, string>;
    const timing = ["--no-floors", "-q", "--sizes", "256", "--warm-up", "100ms", "--samples", "20"];
    try {
      assert.notEqual(urls["h2-tls"], urls["h3"], "lab serve --tls-port 0 puts h3 on its own port");
      const base = ["bench", "--target", urls["h2-tls"], "--ca", `${state}/ca.pem`, ...timing];
      const one = await runLab(base);
      const out = new TextDecoder().decode(one.stdout);
      assert.equal(one.code, 0, one.stderr);
      assert.match(out, /^h2-tls .* req\/s/m, "h2-TLS was measured");
      assert.doesNotMatch(out, /^h3 .* req\/s/m);
      assert.match(out, new RegExp(`h3 FAILED at ${urls["h2-tls"]}: .*--target-h3`));
      const both = await runLab([...base, "--target-h3", urls["h3"]]);
      const text = new TextDecoder().decode(both.stdout);
      assert.equal(both.code, 0, both.stderr);
      assert.match(text, /^h2-tls .* req\/s/m);
      assert.match(text, /^h3 .* req\/s/m, "h3 was measured at its own URL");
      assert.doesNotMatch(text, /FAILED/);
      const usage = await runLab(["bench", "--target-h3", urls["h3"]]);
      assert.equal(usage.code, 2);
      assert.match(usage.stderr, /--target-h3 needs --target/);
    } finally {
      await srv.stop();
      await Deno.remove(state, { recursive: true });
    }
  },
});
