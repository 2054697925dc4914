/**
 * The process the wake-up probe measures, one echo per run:
 * `deno run -A --unstable-net profile/wakeup/_echo_side.ts callback|wait|doorbell LIBRARY`
 * answers through the wake-up library (ring_echo.ts), `… _echo_side.ts deno` through
 * `Deno.listenDatagram` (the path the modules use today). Prints its UDP port on one
 * line, echoes until a zero-length datagram, then prints its counters as one JSON line.
 */
import { type Mechanism, MECHANISMS, startRingEcho } from "./ring_echo.ts";

const [arm, library] = Deno.args;
if (arm === "deno") {
  const sock = Deno.listenDatagram({ hostname: "127.0.0.1", port: 0, transport: "udp" });
  console.log((sock.addr as Deno.NetAddr).port);
  const buf = new Uint8Array(65536);
  let received = 0, sent = 0;
  for (;;) {
    const [data, addr] = await sock.receive(buf);
    received++;
    if (data.length === 0) break;
    await sock.send(data, addr);
    sent++;
  }
  sock.close();
  console.log(JSON.stringify({ received, sent, answered: sent }));
} else if ((MECHANISMS as readonly string[]).includes(arm) && library) {
  const echo = await startRingEcho(library, arm as Mechanism);
  console.log(echo.port);
  console.log(JSON.stringify(await echo.done));
} else {
  console.error(`usage: _echo_side.ts ${MECHANISMS.join("|")} LIBRARY | deno`);
  Deno.exit(2);
}
