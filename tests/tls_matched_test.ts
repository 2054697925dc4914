/**
 * Matched TLS on the native stack: the h2 module and the h3 module are built
 * with the one priority string of transports/native/sb_tls.h and run on the
 * same GnuTLS, so h2 over TLS and h3 negotiate the same version, suite and
 * group between sbilab's own ends (checked in the binaries and on the wire).
 */
import assert from "node:assert/strict";
import { ROOT } from "../lib/host.ts";
import { ensureBuilt } from "../lib/native_build.ts";
import { H2_NATIVE_SKIP } from "../transports/h2/_test_util.ts";
import { sbh2Versions } from "../transports/h2/ffi.ts";
import { loadH2Library } from "../transports/h2/loader.ts";
import { h3Versions } from "../transports/h3/mod.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import { startPair } from "./support.ts";

const skip = H2_NATIVE_SKIP !== null || H3_SKIP !== null;

/** The string SB_TLS_PRIORITY expands to: its C string literals, joined. */
async function sharedPriority(): Promise<string> {
  const header = await Deno.readTextFile(`${ROOT}/transports/native/sb_tls.h`);
  const lines = header.split("\n");
  const first = lines.findIndex((l) => l.startsWith("#define SB_TLS_PRIORITY"));
  assert.ok(first >= 0, "SB_TLS_PRIORITY is not defined in sb_tls.h");
  let last = first;
  while (lines[last].trimEnd().endsWith("\\")) last++; // continued with a backslash
  const define = lines.slice(first, last + 1).join("\n");
  const literals = [...define.matchAll(/"([^"]*)"/g)].map((m) => m[1]);
  assert.ok(literals.length > 0, "SB_TLS_PRIORITY has no string literal");
  return literals.join("");
}

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

Deno.test({
  name:
    "the h2 and h3 modules carry the one GnuTLS priority string of sb_tls.h and run on the same GnuTLS",
  ignore: skip,
  fn: async () => {
    const priority = await sharedPriority();
    assert.match(priority, /\+VERS-TLS1\.3/);
    const bytes = new TextEncoder().encode(`${priority}\0`);
    for (const target of ["h2", "h3"]) {
      const lib = await Deno.readFile(await ensureBuilt(target, { quiet: true }));
      assert.ok(contains(lib, bytes), `the ${target} module does not carry ${priority}`);
    }
    const h2 = sbh2Versions((await loadH2Library()).symbols).gnutls;
    const h3 = (await h3Versions()).gnutls;
    assert.match(h2, /^\d+\.\d+\.\d+$/);
    assert.equal(h2, h3, "the h2 and h3 modules load different GnuTLS versions");
  },
});

Deno.test({
  name:
    "h2 over TLS and h3 negotiate the same TLS version, suite and group between sbilab's own ends (native stack)",
  ignore: skip,
  fn: async () => {
    const seen: Record<string, string> = {};
    for (const transport of ["h2-tls", "h3"] as const) {
      const pair = await startPair(transport, { stack: "native" });
      try {
        assert.equal(
          (await pair.client.request({ path: "/nbench/v1/payload?size=16" })).status,
          200,
        );
        const tls = pair.client.connectionInfo?.()?.tls;
        assert.ok(tls?.version && tls.suite && tls.group, `${transport} reports no TLS parameters`);
        assert.match(tls.library, /^GnuTLS \d/);
        seen[transport] = `${tls.library} ${tls.version} ${tls.suite} ${tls.group}`;
      } finally {
        await pair.close();
      }
    }
    assert.equal(seen["h2-tls"], seen["h3"]);
    assert.match(seen["h3"], / TLS1\.3 TLS_AES_128_GCM_SHA256 SECP256R1$/);
  },
});
