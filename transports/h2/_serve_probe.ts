/**
 * Test probe: runs the native h2c server around the shared handler in a
 * process of its own (so a test can give it a small descriptor limit).
 * Prints `listening <url>` once ready; on SIGTERM closes the server and
 * prints `accept-errors <n>`, then exits 0.
 *
 * Usage: deno run -A transports/h2/_serve_probe.ts
 */
import { createHandler } from "../../handler/mod.ts";
import { createNativeH2cServer } from "./native_server.ts";

const server = await createNativeH2cServer(createHandler(), { onError: () => {} });
console.log(`listening ${server.url}`);
Deno.addSignalListener("SIGTERM", async () => {
  await server.close();
  console.log(`accept-errors ${server.acceptErrors}`);
  Deno.exit(0);
});
