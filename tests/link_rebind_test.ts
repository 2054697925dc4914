/**
 * The relay's NAT rebinding (what `--scenario migration` uses): after
 * `link.rebind()` the server sees the client's UDP and TCP flows at another
 * source port while the client still gets the replies; an established TCP
 * connection is reset by the server (unknown 4-tuple) and a new one works.
 */
import assert from "node:assert/strict";
import { openLink, parseLinkSpec } from "../linkemu/mod.ts";
import { evalIn, LineReader, LINK_SKIP } from "../linkemu/_test_util.ts";

const ignore = LINK_SKIP !== null;

/** Answers every datagram with the source port it came from. */
const UDP_PORT_ECHO = (host: string) => `
  const s = Deno.listenDatagram({ transport: "udp", hostname: "${host}", port: 47110 });
  console.log("ready");
  for await (const [, addr] of s) await s.send(new TextEncoder().encode(String(addr.port)), addr);`;

/** Answers every TCP connection's bytes with the peer's port, one line each. */
const TCP_PORT_ECHO = (host: string) => `
  const l = Deno.listen({ hostname: "${host}", port: 47111 });
  console.log("ready");
  for await (const c of l) {
    c.setNoDelay(true);
    (async () => {
      const b = new Uint8Array(16);
      for (;;) {
        const n = await c.read(b).catch(() => null);
        if (n === null) break;
        await c.write(new TextEncoder().encode(String(c.remoteAddr.port) + "\\n")).catch(() => {});
      }
      try { c.close(); } catch { /* already closed */ }
    })();
  }`;

/** Asks the UDP and TCP servers for the port they see, waits for "go" on stdin, asks again. */
const CLIENT = (server: string) => `
  const dec = new TextDecoder();
  const bounded = (p, ms) => {
    let t;
    return Promise.race([p, new Promise((_, no) => (t = setTimeout(() => no(new Error("timeout")), ms)))])
      .finally(() => clearTimeout(t));
  };
  const u = Deno.listenDatagram({ transport: "udp", hostname: "0.0.0.0", port: 0 });
  const to = { transport: "udp", hostname: "${server}", port: 47110 };
  const askUdp = async () => {
    await u.send(new Uint8Array([1]), to);
    const [data, from] = await bounded(u.receive(), 3000);
    return { seen: Number(dec.decode(data)), local: u.addr.port, fromPort: from.port };
  };
  const c = await Deno.connect({ hostname: "${server}", port: 47111 });
  c.setNoDelay(true);
  const askTcp = async (conn) => {
    await conn.write(new Uint8Array([1]));
    const b = new Uint8Array(16);
    const n = await bounded(conn.read(b), 3000);
    if (n === null) throw new Error("closed");
    return { seen: Number(dec.decode(b.subarray(0, n)).trim()), local: conn.localAddr.port };
  };
  const before = { udp: await askUdp(), tcp: await askTcp(c) };
  console.log("asked");
  const stdin = Deno.stdin.readable.getReader();
  await bounded(stdin.read(), 10000);
  const udp = await askUdp();
  let oldTcp;
  try {
    oldTcp = { ok: await askTcp(c) };
  } catch (err) {
    oldTcp = { error: err.name + ": " + err.message };
  }
  const fresh = await Deno.connect({ hostname: "${server}", port: 47111 });
  const newTcp = await askTcp(fresh);
  console.log(JSON.stringify({ before, udp, oldTcp, newTcp }));
  Deno.exit(0);`;

Deno.test({
  name:
    "rebind moves the client's UDP and TCP flows to a new port; the old TCP connection is reset",
  ignore,
  fn: async () => {
    await using link = await openLink(parseLinkSpec("rtt=2ms"));
    const udpServer = evalIn(link, "server", UDP_PORT_ECHO(link.serverAddr));
    const tcpServer = evalIn(link, "server", TCP_PORT_ECHO(link.serverAddr));
    await new LineReader(udpServer.stdout).waitFor(/^ready$/);
    await new LineReader(tcpServer.stdout).waitFor(/^ready$/);
    const client = link.exec(
      "client",
      [Deno.execPath(), "eval", "--quiet", "--unstable-net", CLIENT(link.serverAddr)],
      { stdin: "piped", stdout: "piped", stderr: "inherit" },
    );
    const lines = new LineReader(client.stdout);
    await lines.waitFor(/^asked$/);
    assert.equal(await link.rebind(), 1);
    const w = client.stdin.getWriter();
    await w.write(new TextEncoder().encode("go\n"));
    await w.close();
    const result = JSON.parse(await lines.waitFor(/^\{/, 15000));
    // Before: the server sees the client's own ports.
    assert.equal(result.before.udp.seen, result.before.udp.local);
    assert.equal(result.before.tcp.seen, result.before.tcp.local);
    // After: same client socket, another port at the server; replies still arrive from port 47110.
    assert.equal(result.udp.local, result.before.udp.local);
    assert.notEqual(result.udp.seen, result.udp.local, "the server saw the UDP flow at a new port");
    assert.equal(result.udp.fromPort, 47110);
    assert.ok(
      result.oldTcp.error,
      `the old TCP connection kept working: ${JSON.stringify(result.oldTcp)}`,
    );
    assert.notEqual(
      result.newTcp.seen,
      result.newTcp.local,
      "a new TCP connection is also rebound",
    );
    assert.equal((await client.status).code, 0);
    const stats = await link.stats();
    assert.ok(stats, "relay counters");
  },
});
