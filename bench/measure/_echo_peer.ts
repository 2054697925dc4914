/**
 * Echo peer for the runtime floor, run in its own process:
 * `deno run -A --unstable-net bench/measure/_echo_peer.ts tcp|udp`. Prints its port on
 * one stdout line, then echoes until stdin closes (the parent exits or kills it).
 */
const proto = Deno.args[0];
if (proto === "tcp") {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  console.log((listener.addr as Deno.NetAddr).port);
  for await (const conn of listener) {
    conn.setNoDelay(true);
    (async () => {
      const buf = new Uint8Array(65536);
      try {
        for (;;) {
          const n = await conn.read(buf);
          if (n === null) break;
          let off = 0;
          while (off < n) off += await conn.write(buf.subarray(off, n));
        }
      } catch {
        // peer went away
      }
      conn.close();
    })();
  }
} else if (proto === "udp") {
  const sock = Deno.listenDatagram({ hostname: "127.0.0.1", port: 0, transport: "udp" });
  console.log((sock.addr as Deno.NetAddr).port);
  for (;;) {
    const [data, addr] = await sock.receive();
    await sock.send(data, addr);
  }
} else {
  console.error("usage: _echo_peer.ts tcp|udp");
  Deno.exit(2);
}
