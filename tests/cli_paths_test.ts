/** Relative paths given to `deno task lab …` resolve where the user stands, not in the repository. */
import assert from "node:assert/strict";
import { pathExists, ROOT } from "../lib/host.ts";

Deno.test("lab certs --out ./pki run through deno task from another folder writes there", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sbilab-cwd-" });
  const name = `pki-${crypto.randomUUID().slice(0, 8)}`;
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "task",
        "--quiet",
        "--config",
        `${ROOT}/deno.json`,
        "lab",
        "certs",
        "--out",
        `./${name}`,
      ],
      cwd: dir,
      // what npx or deno task leaves for the lab when the user stands in `dir`
      env: { INIT_CWD: dir },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    assert.equal(await pathExists(`${dir}/${name}/ca.pem`), true, "ca.pem where the user stands");
    assert.equal(await pathExists(`${ROOT}/${name}`), false, "nothing in the repository");
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(`${ROOT}/${name}`, { recursive: true }).catch(() => {});
  }
});
