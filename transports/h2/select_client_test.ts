import assert from "node:assert/strict";
import { h2ClientKind } from "./select_client.ts";
import { H2_NATIVE_SKIP } from "./_test_util.ts";
import { ROOT } from "../host.ts";

Deno.test({
  name: "h2 client choice is native by default where the library loads",
  ignore: H2_NATIVE_SKIP !== null,
  fn: async () => {
    const saved = Deno.env.get("SBILAB_H2_CLIENT");
    try {
      Deno.env.delete("SBILAB_H2_CLIENT");
      assert.equal(await h2ClientKind({}), "native");
    } finally {
      if (saved !== undefined) Deno.env.set("SBILAB_H2_CLIENT", saved);
    }
  },
});

Deno.test("h2 client choice follows the option, then SBILAB_H2_CLIENT", async () => {
  const saved = Deno.env.get("SBILAB_H2_CLIENT");
  try {
    Deno.env.delete("SBILAB_H2_CLIENT");
    assert.equal(await h2ClientKind({ h2Client: "fetch" }), "fetch");
    assert.equal(await h2ClientKind({ h2Client: "native" }), "native");
    Deno.env.set("SBILAB_H2_CLIENT", "fetch");
    assert.equal(await h2ClientKind({}), "fetch");
    assert.equal(await h2ClientKind({ h2Client: "native" }), "native");
    Deno.env.set("SBILAB_H2_CLIENT", "curl");
    await assert.rejects(h2ClientKind({}), RangeError);
  } finally {
    if (saved === undefined) Deno.env.delete("SBILAB_H2_CLIENT");
    else Deno.env.set("SBILAB_H2_CLIENT", saved);
  }
});

Deno.test("a broken SBILAB_H2_LIB makes the default fall back to fetch and an explicit native choice fail with H2LoadError", async () => {
  const code = `
    import { createH2Client, h2ClientKind } from "${ROOT}/transports/h2/mod.ts";
    console.log(await h2ClientKind({}));
    try { await createH2Client("http://127.0.0.1:9", { h2Client: "native" }); console.log("opened"); }
    catch (e) { console.log(e.name + ": " + e.message); }
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--config", `${ROOT}/deno.json`, code],
    env: { SBILAB_H2_LIB: "/nonexistent/libsbilab_h2.so" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  assert.equal(lines[0], "fetch");
  assert.match(lines[1], /^H2LoadError: Cannot open SBILAB_H2_LIB=\/nonexistent/);
});
