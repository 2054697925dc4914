import assert from "node:assert/strict";
import { NativeLoadError, nativeModule, systemLibraryVersion, versionParts } from "./library.ts";

class FakeLoadError extends NativeLoadError {
  override readonly name = "FakeLoadError";
}

Deno.test("a native module's loader names the override it cannot open and retries on the next call", async () => {
  const env = "SBILAB_TEST_FAKE_LIB";
  const lib = "/nonexistent/libsbilab_fake.so";
  Deno.env.set(env, lib);
  try {
    const mod = nativeModule({
      envVar: env,
      target: "fake",
      embeddedUrl: new URL("file:///nonexistent/libsbilab_fake.so"),
      symbols: { getpid: { parameters: [], result: "i32" } },
      what: "Fake module",
      error: (message, options) => new FakeLoadError(message, options),
    });
    await assert.rejects(
      mod.load(),
      (e) =>
        e instanceof FakeLoadError && e instanceof NativeLoadError &&
        e.message.startsWith(`Cannot open ${env}=${lib}`),
    );
    assert.equal(await mod.available(), false);
    // the failure is not kept: once the override names a library that opens, the next call opens it
    Deno.env.set(env, "libc.so.6");
    const opened = await mod.load();
    assert.equal(opened.path, "libc.so.6");
    assert.equal(opened.symbols.getpid(), Deno.pid);
    assert.equal(await mod.load(), opened, "the opened library is shared");
  } finally {
    Deno.env.delete(env);
  }
});

Deno.test("version texts split into their parts by name", () => {
  assert.deepEqual(versionParts("sbh3/0.1.0 ngtcp2/0.12.1 nghttp3/0.8.0 gnutls/3.7.9"), {
    sbh3: "0.1.0",
    ngtcp2: "0.12.1",
    nghttp3: "0.8.0",
    gnutls: "3.7.9",
  });
  assert.deepEqual(versionParts(""), {});
});

Deno.test("a system library that is not there has no version", () => {
  assert.equal(
    systemLibraryVersion("libsbilab_nonexistent.so.0", "nonexistent_version"),
    undefined,
  );
});
