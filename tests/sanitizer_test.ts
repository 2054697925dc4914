/**
 * The native modules built under AddressSanitizer and UndefinedBehaviorSanitizer (clang), driven by
 * their own in-memory leak-check drivers (transports/h2/native/leakcheck.c,
 * transports/h3/native/leakcheck.c) through `scripts/fuzz.sh sanitize`: a bad access, undefined
 * behaviour or a leak (LeakSanitizer) fails the run. The valgrind runs of the same drivers stay
 * (transports/h2/leakcheck_test.ts, tests/h3_leak_test.ts); the fuzz targets are docs/fuzzing.md.
 */
import assert from "node:assert/strict";
import { writeDevPki } from "../transports/pki.ts";
import { needsTool, ROOT } from "./support.ts";

Deno.test({
  name:
    "sbh2 and sbh3 shims run their leak-check drivers clean under ASan, UBSan and LeakSanitizer",
  ignore: needsTool("clang", "clang libclang-rt-14-dev"),
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      await writeDevPki(dir);
      const out = await new Deno.Command("bash", {
        args: [`${ROOT}/scripts/fuzz.sh`, "sanitize", dir],
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(300_000),
      }).output();
      const stdout = new TextDecoder().decode(out.stdout);
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, stdout + stderr.slice(0, 4000));
      assert.doesNotMatch(stderr, /runtime error|AddressSanitizer|LeakSanitizer/);
      assert.match(stdout, /^ok: 25 answered, .*bad 0$/m);
      assert.match(
        stdout,
        /^server ok: \d+ served, 1 too large, 1 over budget, 11 released; bad 0$/m,
      );
      assert.match(stdout, /^tls: 22 answered; .*; bad 0$/m);
      assert.match(stdout, /^ok: 39 answered, 1 cancelled; sockets: 20 answered, refused seen/m);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
