/**
 * Only `main.ts` chooses the exit status: no other product module calls
 * `Deno.exit`. The processes sbilab spawns as entry points of their own
 * (the echo and bare runtime peers, the wake-up probe and its echo sides,
 * the setup scripts) end themselves. One module ends a process that is
 * already dying: the native I/O loop, on an error nobody handled while a
 * module's thread runs, exits with Deno's own status for it (1) so that
 * Deno does not tear the isolate down under the thread.
 */
import assert from "node:assert/strict";
import { ROOT } from "../lib/host.ts";

/** Entry points of their own processes, besides main.ts. */
const OWN_PROCESSES = [
  /^scripts\//,
  /^bench\/measure\/_(echo|bare)_peer\.ts$/,
  /^profile\/wakeup\/(main|_echo_side)\.ts$/,
];

/** Modules that end a process dying of an uncaught error, with the status Deno gives it. */
const DYING_PROCESS = ["transports/native/io_loop.ts"];

Deno.test("no product module but main.ts calls Deno.exit (the I/O loop only to end a dying process)", async () => {
  const out = await new Deno.Command("git", {
    args: ["ls-files", "--cached", "--others", "--exclude-standard", "*.ts"],
    cwd: ROOT,
    stdout: "piped",
  }).output();
  assert.ok(out.success, "git ls-files failed");
  const files = new TextDecoder().decode(out.stdout).split("\n").filter((f) =>
    f.endsWith(".ts") && !f.endsWith("_test.ts") && !f.startsWith("tests/") &&
    !f.startsWith("node_modules/") && f !== "main.ts" && !OWN_PROCESSES.some((p) => p.test(f))
  );
  assert.ok(files.length > 50, `only ${files.length} product modules found`);
  const calling: string[] = [];
  for (const f of files) {
    const text = await Deno.readTextFile(`${ROOT}/${f}`);
    if (/\bDeno\.exit\s*\(/.test(text)) calling.push(f);
  }
  assert.deepEqual(calling, DYING_PROCESS);
  // and only for that: its one call exits 1 from the uncaught-error listener
  const loop = await Deno.readTextFile(`${ROOT}/${DYING_PROCESS[0]}`);
  assert.deepEqual(loop.match(/\bDeno\.exit\s*\([^)]*\)/g), ["Deno.exit(1)"]);
  assert.match(await Deno.readTextFile(`${ROOT}/main.ts`), /\bDeno\.exit\(/);
});
