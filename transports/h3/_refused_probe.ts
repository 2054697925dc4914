/**
 * Child-process check for client_test.ts: an h3 request to a UDP port where
 * nothing listens. Prints the error's name and message as one JSON line.
 * Run apart from `deno test`'s shared process: there, after the linkemu tests,
 * the client's off-thread wait was sometimes not scheduled for seconds (see
 * the h3 note), which would test that process rather than the ICMP path.
 */
import { createDevPki } from "../pki.ts";
import { createH3Client } from "./mod.ts";

if (import.meta.main) {
  const pki = await createDevPki();
  // Nothing listens at 127.0.0.2:port. The placeholder holds the port on 127.0.0.1 so the
  // client's own socket cannot be given it (it would then talk to itself).
  const placeholder = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const port = (placeholder.addr as Deno.NetAddr).port;
  // The request timeout (3 s) is shorter than the handshake timeout (5 s): without the
  // ICMP error this request ends in TimeoutError.
  const client = await createH3Client(`https://127.0.0.2:${port}`, {
    tls: { ca: pki.caCertPem },
    timeoutMs: 3000,
  });
  let out = { name: "none", message: "the request succeeded" };
  try {
    await client.request({ path: "/nbench/v1/payload?size=1" });
  } catch (err) {
    out = { name: (err as Error).name, message: (err as Error).message };
  } finally {
    await client.close();
    placeholder.close();
  }
  console.log(JSON.stringify(out));
}
