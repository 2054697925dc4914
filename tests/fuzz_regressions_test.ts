/**
 * Replays the fuzz corpora and every saved crash (fuzz/corpus/TARGET, fuzz/regressions/TARGET)
 * through each fuzz target built without libFuzzer or sanitizers, as the modules are built
 * (`scripts/fuzz.sh replay`), under valgrind: an input that breaks a target's invariants, leaks
 * or touches memory it does not own fails the test. The fuzzing itself is docs/fuzzing.md.
 */
import assert from "node:assert/strict";
import { BUILD_DIR } from "../lib/native_build.ts";
import { needsTool, ROOT } from "./support.ts";

const noValgrind = needsTool("valgrind", "valgrind");

/** What each target takes in. */
const TARGETS: Record<string, string> = {
  h2_server: "the h2 server session fed client byte streams (h2c and TLS)",
  h2_client: "the h2 client session fed server byte streams (h2c and TLS)",
  h3_server: "the h3 server endpoint fed client datagrams and stream bytes",
  h3_client: "the h3 client connection fed server datagrams and stream bytes",
  sbwire: "the shared header-block and event-record format",
  load_plan: "the load engine's plan decoder",
  load_h2: "the h2 load engine's response path",
};

for (const [target, what] of Object.entries(TARGETS)) {
  Deno.test({
    name: `fuzz target ${target} (${what}) replays its corpus and saved crashes cleanly (valgrind)`,
    ignore: noValgrind,
    fn: async () => {
      const out = await new Deno.Command("bash", {
        args: [`${ROOT}/scripts/fuzz.sh`, "replay", target],
        env: { FUZZ_VALGRIND: "1" },
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(300_000),
      }).output();
      const text = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, text.split("\n").slice(-20).join("\n"));
      let inputs = 0;
      for (const d of [`${ROOT}/fuzz/corpus/${target}`, `${ROOT}/fuzz/regressions/${target}`]) {
        try {
          for await (const e of Deno.readDir(d)) if (e.isFile) inputs++;
        } catch (err) {
          if (!(err instanceof Deno.errors.NotFound)) throw err;
        }
      }
      const log = await Deno.readTextFile(`${BUILD_DIR}/fuzz/${target}.replay.log`);
      const ran = log.split("\n").filter((l) => l.startsWith("running ")).length;
      assert.ok(inputs > 0, `no inputs for ${target}`);
      assert.equal(ran, inputs, "every input ran");
    },
  });
}
