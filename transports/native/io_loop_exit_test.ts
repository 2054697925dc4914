/**
 * A script that dies of an error nobody handled while a module's I/O thread
 * runs ends as Deno would end it (its message, status 1), never with a
 * segmentation fault from the thread calling into a torn-down isolate.
 */
import assert from "node:assert/strict";
import { createHandler } from "../../handler/mod.ts";
import { createNativeH2cServer } from "../h2/server.ts";
import { H2_NATIVE_SKIP } from "../h2/_test_util.ts";
import { ROOT } from "../../lib/host.ts";

const ignore = H2_NATIVE_SKIP !== null;

/** A module-I/O client keeping 64 requests in flight at `url`, then `die` after 300 ms. */
function snippet(url: string, die: string): string {
  return `
import { createNativeH2Client } from "./transports/h2/client.ts";
const c = await createNativeH2Client(${JSON.stringify(url)}, { io: "module", timeoutMs: 10_000 });
let n = 0;
async function worker() {
  while (n++ < 200_000) await c.request({ path: "/nbench/v1/payload?size=256" }).catch(() => {});
}
for (let i = 0; i < 64; i++) worker();
await new Promise((r) => setTimeout(r, 300));
${die}
`;
}

const DEATHS = {
  "a top-level throw": `throw new Error("boom-top");`,
  "a throw in a timer": `setTimeout(() => { throw new Error("boom-timer"); }, 0);`,
};

Deno.test({
  name: "an uncaught error while a module's I/O thread runs exits with status 1 and the error",
  ignore,
  fn: async () => {
    const s = await createNativeH2cServer(createHandler());
    try {
      // The crash this guards against came in about 3 runs in 10; 6 runs of each kind
      // all end cleanly only with the guard.
      for (const [kind, die] of Object.entries(DEATHS)) {
        const word = die.match(/boom-\w+/)![0];
        for (let run = 0; run < 6; run++) {
          const out = await new Deno.Command(Deno.execPath(), {
            args: ["eval", "--unstable-net", snippet(s.url, die)],
            cwd: ROOT,
            env: { NO_COLOR: "1" },
            stdout: "null",
            stderr: "piped",
          }).output();
          const err = new TextDecoder().decode(out.stderr);
          assert.equal(out.signal, null, `${kind}, run ${run}: killed by ${out.signal}\n${err}`);
          assert.equal(out.code, 1, `${kind}, run ${run}\n${err}`);
          assert.match(err, new RegExp(`^error: Uncaught .*Error: ${word}`, "m"), kind);
        }
      }
    } finally {
      await s.close();
    }
  },
});
