import assert from "node:assert/strict";
import { createDevPki } from "../pki.ts";
import { NATIVE_ERR } from "../native/errors.ts";
import { H3Config } from "./h3_config.ts";
import { H3Error } from "./h3_error.ts";
import { H3ServerEndpoint } from "./h3_server_endpoint.ts";
import { H3Socket } from "./h3_socket.ts";
import { loadH3Library } from "./loader.ts";
import { H3_SKIP } from "./_test_util.ts";

const ignore = H3_SKIP !== null;

/** Resolves with the promise's value, or rejects when `ms` pass first. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A datagram the server endpoint drops without answering (long header, no valid QUIC). */
function junk(round: number, i: number): Uint8Array {
  const b = new Uint8Array(40).fill(0xee);
  b[0] = 0xc0;
  b[1] = round;
  b[2] = i;
  return b;
}

Deno.test({
  name:
    "h3 socket: Deno's receive still wakes for each new datagram after io() drained the socket behind its back",
  ignore,
  fn: async () => {
    const { symbols } = await loadH3Library();
    const pki = await createDevPki();
    using config = new H3Config(symbols, true, {
      certPem: pki.serverCertPem,
      keyPem: pki.serverKeyPem,
    });
    using sock = new H3Socket(symbols, "127.0.0.1", 0);
    using ep = new H3ServerEndpoint(symbols, config, "127.0.0.1", sock.port);
    const peer = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    const to: Deno.NetAddr = { transport: "udp", hostname: "127.0.0.1", port: sock.port };
    try {
      for (let round = 0; round < 30; round++) {
        // A burst: Deno's receive takes the first datagram, io() must drain the other four
        // with recvmmsg (Deno's reactor saw them arrive, its readiness is now stale).
        for (let i = 0; i < 5; i++) await peer.send(junk(round, i), to);
        const [first, from] = (await within(sock.receive(), 2000, `round ${round} burst`))!;
        assert.equal(first[1], round);
        assert.equal(first[2], 0);
        assert.equal(ep.io(sock, first, from), 5, "io() fed the first and drained four");
        assert.equal(ep.io(sock), 0, "nothing left on the socket");
        // Now one more: the receive must wake (edge-triggered readiness re-armed after the
        // spurious WouldBlock) and get exactly this datagram.
        const next = sock.receive();
        await peer.send(junk(round, 9), to);
        const [one] = (await within(next, 2000, `round ${round} single`))!;
        assert.equal(one[1], round);
        assert.equal(one[2], 9);
        assert.equal(ep.io(sock, one, from), 1);
      }
      assert.equal(ep.connCount(), 0);
    } finally {
      peer.close();
    }
  },
});

Deno.test({
  name: "h3 socket: close() ends a pending receive with null and leaves no handle behind",
  ignore,
  fn: async () => {
    const { symbols } = await loadH3Library();
    const sock = new H3Socket(symbols, "127.0.0.1", 0);
    const pending = sock.receive();
    sock.close();
    assert.equal(await within(pending, 2000, "receive after close"), null);
    assert.equal(await sock.receive(), null);
    assert.throws(() => sock.pointer, (e) => e instanceof H3Error && e.code === NATIVE_ERR.CLOSED);
    sock.close();
    // The port is free again: the descriptor was closed, not just forgotten.
    const again = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: sock.port });
    again.close();
  },
});

Deno.test({
  name:
    "h3 socket, exact ECN: ready() wakes for each new datagram after io() drained the socket, and reads none",
  ignore,
  fn: async () => {
    const { symbols } = await loadH3Library();
    const pki = await createDevPki();
    using config = new H3Config(symbols, true, {
      certPem: pki.serverCertPem,
      keyPem: pki.serverKeyPem,
    });
    using sock = new H3Socket(symbols, "127.0.0.1", 0, true);
    using ep = new H3ServerEndpoint(symbols, config, "127.0.0.1", sock.port);
    const peer = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    const to: Deno.NetAddr = { transport: "udp", hostname: "127.0.0.1", port: sock.port };
    try {
      for (let round = 0; round < 30; round++) {
        // A burst: the wait reads nothing, so io() takes all five with recvmmsg.
        for (let i = 0; i < 5; i++) await peer.send(junk(round, i), to);
        assert.equal(await within(sock.ready(), 2000, `round ${round} burst`), true);
        assert.equal(await within(sock.ready(), 2000, `round ${round} still ready`), true);
        const [empty] = (await within(sock.receive(), 2000, `round ${round} receive`))!;
        assert.equal(empty.length, 0, "receive() hands the datagrams to io(), not to the caller");
        assert.equal(ep.io(sock), 5, "io() read the whole burst");
        assert.equal(ep.io(sock), 0, "nothing left on the socket");
        // One more: a wait started on the empty socket wakes for it, and not before.
        const next = sock.ready();
        const idle = await Promise.race([
          next,
          new Promise((r) => setTimeout(() => r("idle"), 20)),
        ]);
        assert.equal(idle, "idle", "no wake-up while nothing is there");
        await peer.send(junk(round, 9), to);
        assert.equal(await within(next, 2000, `round ${round} single`), true);
        assert.equal(ep.io(sock), 1);
      }
    } finally {
      peer.close();
    }
  },
});

Deno.test({
  name: "h3 socket, exact ECN: close() ends a pending wait with false and frees the port",
  ignore,
  fn: async () => {
    const { symbols } = await loadH3Library();
    const sock = new H3Socket(symbols, "127.0.0.1", 0, true);
    const pending = sock.ready();
    const receiving = sock.receive();
    sock.close();
    assert.equal(await within(pending, 2000, "ready after close"), false);
    assert.equal(await within(receiving, 2000, "receive after close"), null);
    assert.equal(await sock.ready(), false);
    assert.throws(() => sock.pointer, (e) => e instanceof H3Error && e.code === NATIVE_ERR.CLOSED);
    sock.close();
    const again = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: sock.port });
    again.close();
  },
});

Deno.test({
  name: "h3 socket: binding a UDP port in use fails with H3Error SOCKET naming the address",
  ignore,
  fn: async () => {
    const { symbols } = await loadH3Library();
    const holder = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    const port = (holder.addr as Deno.NetAddr).port;
    try {
      assert.throws(
        () => new H3Socket(symbols, "127.0.0.1", port),
        (e) =>
          e instanceof H3Error && e.code === NATIVE_ERR.SOCKET &&
          e.message.includes(`127.0.0.1:${port}`) && /in use/i.test(e.message),
      );
    } finally {
      holder.close();
    }
  },
});
