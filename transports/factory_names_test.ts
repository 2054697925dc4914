import assert from "node:assert/strict";
import { ROOT } from "../lib/host.ts";

/** Every transport factory is `create` + stack + transport + role, as `createNativeH3Client`. */
const FACTORY = /^create(Native|Deno)(H2c|H2Tls|H2|H3)(Server|Client)$/;

/** The stack-level pair in `mod.ts` that picks one of them. */
const DISPATCHERS = new Set(["createServer", "createClient"]);

async function exportedFactories(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const entry of Deno.readDir(`${ROOT}/${dir}`)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) {
      for (const [name, file] of await exportedFactories(path)) out.set(name, file);
    } else if (
      entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts") && !entry.name.startsWith("_")
    ) {
      const text = await Deno.readTextFile(`${ROOT}/${path}`);
      const re =
        /export (?:async )?function ((?:create|make|new|open|start|build)\w*(?:Server|Client))\b/g;
      for (const m of text.matchAll(re)) out.set(m[1], path);
    }
  }
  return out;
}

Deno.test("every transport's server and client factory is named create + stack + transport + role", async () => {
  const found = await exportedFactories("transports");
  const off = [...found].filter(([name]) => !DISPATCHERS.has(name) && !FACTORY.test(name))
    .map(([name, file]) => `${name} (${file})`);
  assert.deepEqual(off, [], `factories off the pattern:\n${off.join("\n")}`);
  const names = [...found.keys()].filter((n) => FACTORY.test(n)).sort();
  assert.deepEqual(names, [
    "createDenoH2Client",
    "createDenoH2TlsServer",
    "createDenoH2cServer",
    "createDenoH3Client",
    "createDenoH3Server",
    "createNativeH2Client",
    "createNativeH2TlsServer",
    "createNativeH2cServer",
    "createNativeH3Client",
    "createNativeH3Server",
  ]);
});
