/**
 * C-level leak check of the sbh2 shim: native/leakcheck.c drives the client
 * against an in-memory nghttp2 server session, under valgrind. The driver is
 * compiled here (it is a test program, not a build artefact).
 */
import assert from "node:assert/strict";
import { ROOT } from "../host.ts";

async function have(cmd: string, args: string[]): Promise<boolean> {
  try {
    const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).output();
    return out.code !== 127;
  } catch {
    return false;
  }
}

const haveValgrind = await have("valgrind", ["--version"]);
const haveHeaders = await Deno.stat("/usr/include/nghttp2/nghttp2.h").then(() => true, () => false);
const skip = !haveValgrind
  ? "apt-get install -y valgrind"
  : !haveHeaders
  ? "apt-get install -y libnghttp2-dev"
  : null;
if (skip) console.log(`skipping h2 leak check: ${skip}`);

Deno.test({
  name:
    "sbh2 shim frees everything after requests, cancels before and after sending, garbage input, a graceful close and a free with streams in flight (valgrind)",
  ignore: skip !== null,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      const exe = `${dir}/sbh2_leakcheck`;
      const cc = await new Deno.Command(Deno.env.get("CC") ?? "cc", {
        args: [
          "-O0",
          "-g",
          "-Wall",
          "-o",
          exe,
          `${ROOT}/transports/h2/native/leakcheck.c`,
          `${ROOT}/transports/h2/native/sbh2.c`,
          "-lnghttp2",
        ],
        stderr: "piped",
      }).output();
      assert.equal(cc.code, 0, new TextDecoder().decode(cc.stderr));
      const out = await new Deno.Command("valgrind", {
        args: [
          "-q",
          "--leak-check=full",
          "--errors-for-leak-kinds=definite,indirect,possible",
          "--error-exitcode=1",
          exe,
        ],
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(120_000),
      }).output();
      const stdout = new TextDecoder().decode(out.stdout);
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, stdout + stderr.slice(0, 4000));
      assert.match(stdout, /^ok: 25 answered, .*garbage closed.*close closed; bad 0/);
      assert.doesNotMatch(stderr, /definitely lost|Invalid (read|write)/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
