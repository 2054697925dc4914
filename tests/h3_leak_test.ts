/**
 * C-level leak check of the sbh3 shim: the in-memory client/server driver
 * (transports/h3/native/leakcheck.c) under valgrind, which also lists file
 * descriptors left open (the shim must neither close the sockets it adopts
 * nor leave its /proc/self/fd listing open).
 */
import assert from "node:assert/strict";
import { ensureBuilt } from "../lib/native_build.ts";
import { writeDevPki } from "../transports/pki.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import { needsTool } from "./support.ts";

const haveValgrind = !needsTool("valgrind", "valgrind");

Deno.test({
  name:
    "sbh3 shim frees everything and leaves no descriptor open after requests, a cancel, bodies over the limit, a full send queue, garbage input, socket I/O, a refused port, Retry and NEW_TOKEN, a key update and a graceful close (valgrind)",
  ignore: H3_SKIP !== null || !haveValgrind,
  fn: async () => {
    const driver = await ensureBuilt("h3_leakcheck", { quiet: true });
    const dir = await Deno.makeTempDir();
    try {
      await writeDevPki(dir);
      const out = await new Deno.Command("valgrind", {
        args: [
          "-q",
          "--leak-check=full",
          "--errors-for-leak-kinds=definite,indirect,possible",
          "--error-exitcode=1",
          "--track-fds=yes",
          driver,
          `${dir}/ca.pem`,
          `${dir}/server.pem`,
          `${dir}/server-key.pem`,
        ],
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(120_000),
      }).output();
      const stdout = new TextDecoder().decode(out.stdout);
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, stderr.slice(0, 4000));
      assert.match(stdout, /^ok: 39 answered, 1 cancelled; sockets: 20 answered, refused seen/);
      assert.doesNotMatch(stderr, /definitely lost|Invalid (read|write)/);
      assert.doesNotMatch(stderr, /Open AF_INET6? socket|Open file descriptor \d+: \/proc/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
