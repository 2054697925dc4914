import assert from "node:assert/strict";

const MODULE = new URL("./interrupt.ts", import.meta.url).href;

/** Runs a script that registers two cleanups (one unregistered again), then signals itself. */
async function interrupted(signal: "SIGINT" | "SIGTERM", end: string) {
  const script = `
    import { onInterrupt, setInterruptEnd } from ${JSON.stringify(MODULE)};
    ${end}
    onInterrupt(async () => { await Promise.resolve(); console.log("cleaned"); });
    const off = onInterrupt(() => console.log("unregistered ran"));
    off();
    // Ready: the parent signals while this waits (bounded: 10 s).
    console.log("ready");
    setTimeout(() => console.log("not interrupted"), 10_000);
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", script],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("ready\n")) {
    const next = await reader.read();
    if (next.done) break;
    out += next.value;
  }
  child.kill(signal);
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    out += next.value;
  }
  const status = await child.status;
  await child.stderr.cancel();
  return { out, status };
}

Deno.test("an interrupt runs the registered cleanups, then the entry point's end gets the signal", async () => {
  const { out, status } = await interrupted(
    "SIGTERM",
    `setInterruptEnd((why) => Deno.exit(why.signal === "SIGTERM" ? 43 : 41));`,
  );
  assert.equal(out, "ready\ncleaned\n");
  assert.equal(status.code, 43);
});

Deno.test("with no end chosen, an interrupt runs the cleanups and the signal ends the process", async () => {
  const { out, status } = await interrupted("SIGINT", "");
  assert.equal(out, "ready\ncleaned\n");
  assert.equal(status.signal, "SIGINT");
});

Deno.test("a command that returns because an interrupt released its resource still ends with the interrupt's status", async () => {
  const script = `
    import { interruptSettled, onInterrupt, setInterruptEnd } from ${JSON.stringify(MODULE)};
    setInterruptEnd((why) => Deno.exit(why.signal === "SIGINT" ? 41 : 43));
    const released = Promise.withResolvers<void>();
    onInterrupt(async () => { released.resolve(); await new Promise((r) => setTimeout(r, 50)); });
    console.log("ready");
    await released.promise; // the command's work ends here, as a link's holder does
    await interruptSettled();
    Deno.exit(0);
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", script],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("ready\n")) {
    const next = await reader.read();
    if (next.done) break;
    out += next.value;
  }
  child.kill("SIGINT");
  await reader.cancel();
  assert.equal((await child.status).code, 41);
});
