import assert from "node:assert/strict";
import { H3_SKIP } from "./_test_util.ts";

const ignore = H3_SKIP !== null;
import { ROOT } from "../../lib/host.ts";

const root = `${ROOT}/`;

/** Runs a snippet in a fresh Deno process (the loader caches per process). */
async function run(
  code: string,
  env: Record<string, string>,
): Promise<{ code: number; out: string; err: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--unstable-net", code],
    cwd: root,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: out.code, out: d.decode(out.stdout), err: d.decode(out.stderr) };
}

const SNIPPET = `
import { h3Versions } from "./transports/h3/mod.ts";
try { console.log(JSON.stringify(await h3Versions())); }
catch (e) { console.log(e.name + ": " + e.message); }
`;

Deno.test({
  name: "h3 loader honours SBILAB_H3_LIB and names the path when it cannot be opened",
  ignore,
  fn: async () => {
    const { ensureBuilt } = await import("../../lib/native_build.ts");
    const lib = await ensureBuilt("h3", { quiet: true });
    const good = await run(SNIPPET, { SBILAB_H3_LIB: lib });
    const v = JSON.parse(good.out);
    assert.equal(v.path, lib);
    assert.match(v.ngtcp2, /^0\.12\./);
    assert.match(v.nghttp3, /^0\.8\./);
    const bad = await run(SNIPPET, { SBILAB_H3_LIB: "/nonexistent/libsbilab_h3.so" });
    assert.match(bad.out, /^H3LoadError: Cannot open SBILAB_H3_LIB=\/nonexistent\/libsbilab_h3.so/);
  },
});

Deno.test({
  name: "h3 loader falls back to the embedded copy when the local build is impossible",
  ignore,
  fn: async () => {
    // CC pointing nowhere and an empty build dir make ensureBuilt fail; the file at
    // EMBEDDED_LIBRARY_URL (build/libsbilab_h3.so, as deno compile --include puts it) is then used.
    const { ensureBuilt } = await import("../../lib/native_build.ts");
    await ensureBuilt("h3", { quiet: true });
    const empty = await Deno.makeTempDir();
    try {
      const res = await run(SNIPPET, { CC: "/nonexistent/cc", SBILAB_BUILD_DIR: empty });
      const v = JSON.parse(res.out);
      assert.match(v.path, /sbilab_h3_.*\.so$/);
      assert.ok(!v.path.startsWith(`${root}build/`), v.path);
      assert.match(v.ngtcp2, /^0\.12\./);
    } finally {
      await Deno.remove(empty, { recursive: true });
    }
  },
});
