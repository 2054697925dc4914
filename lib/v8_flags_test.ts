import assert from "node:assert/strict";
import { BENCH_V8_FLAGS_ARG, PEER_V8_FLAGS_ARG, V8_FLAGS_ARG } from "./v8_flags.ts";

// A flag V8 does not know stops Deno before the script runs ("V8 did not recognize flag"), so a
// typo, a wrong separator or a flag a newer V8 dropped would stop every benchmark at its start.
for (const arg of [V8_FLAGS_ARG, BENCH_V8_FLAGS_ARG, PEER_V8_FLAGS_ARG]) {
  Deno.test(`this Deno's V8 accepts ${arg}`, async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", arg, "console.log('ran')"],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.success, true, stderr);
    assert.equal(new TextDecoder().decode(out.stdout).trim(), "ran");
  });
}

Deno.test("V8 refuses a misspelt flag, so the test above can fail", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--v8-flags=--no-memory-reducr", "console.log('ran')"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.success, false);
  assert.match(new TextDecoder().decode(out.stderr), /did not recognize/);
});
