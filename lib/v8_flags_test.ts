import assert from "node:assert/strict";
import {
  BENCH_CLIENT_V8_FLAGS_ARG,
  BENCH_V8_FLAGS_ARG,
  PEER_V8_FLAGS_ARG,
  V8_FLAGS_ARG,
} from "./v8_flags.ts";
import { ROOT } from "./host.ts";

// A flag V8 does not know stops Deno before the script runs ("V8 did not recognize flag"), so a
// typo, a wrong separator or a flag a newer V8 dropped would stop every benchmark at its start.
for (
  const arg of [V8_FLAGS_ARG, BENCH_V8_FLAGS_ARG, BENCH_CLIENT_V8_FLAGS_ARG, PEER_V8_FLAGS_ARG]
) {
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

Deno.test("deno task bench starts its client with the benchmark's flags and the collector exposed", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`));
  const bench: string = config.tasks.bench;
  const client = bench.split("&&").at(-1)!;
  assert.match(client, /main\.ts bench$/);
  assert.ok(client.includes(` ${BENCH_CLIENT_V8_FLAGS_ARG} `), client);
  // Under that argument the collector the rounds call is there.
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", BENCH_CLIENT_V8_FLAGS_ARG, "console.log(typeof globalThis.gc)"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(new TextDecoder().decode(out.stdout).trim(), "function");
});
