import assert from "node:assert/strict";
import { addressBytes, socketFd } from "./nodelay.ts";
import { libc } from "../../lib/libc.ts";

const hex = (b: Uint8Array | undefined) =>
  b === undefined ? undefined : Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

Deno.test("addressBytes reads IPv4 as IPv4-mapped IPv6 and IPv6 in its shortened forms", () => {
  assert.equal(hex(addressBytes("127.0.0.1")), "00000000000000000000ffff7f000001");
  assert.equal(hex(addressBytes("::ffff:127.0.0.1")), "00000000000000000000ffff7f000001");
  assert.equal(hex(addressBytes("::1")), "00000000000000000000000000000001");
  assert.equal(hex(addressBytes("::")), "00000000000000000000000000000000");
  assert.equal(hex(addressBytes("fe80::1:2%eth0")), "fe800000000000000000000000010002");
  assert.equal(hex(addressBytes("2001:db8:0:0:0:0:0:ab")), "20010db80000000000000000000000ab");
  assert.equal(hex(addressBytes("2001:db8::")), "20010db8000000000000000000000000");
  for (const bad of ["", "1.2.3", "256.1.1.1", "1::2::3", "1:2:3:4:5:6:7", "g::1", "localhost"]) {
    assert.equal(addressBytes(bad), undefined, bad);
  }
});

/** The local port of `fd`, from libc. */
function localPort(fd: number): number {
  const a = new Uint8Array(128), len = new Uint32Array([128]);
  assert.equal(libc().getsockname(fd, a, len), 0);
  return (a[2] << 8) | a[3];
}

const IPV6_SKIP = (() => {
  try {
    Deno.listen({ hostname: "::1", port: 0 }).close();
    return null;
  } catch {
    return "no IPv6 loopback (::1) on this host";
  }
})();
if (IPV6_SKIP) console.warn(`skipping IPv6 socketFd cases: ${IPV6_SKIP}`);

for (
  const [listenOn, connectTo] of [["127.0.0.1", "127.0.0.1"], ["::1", "::1"], ["::", "127.0.0.1"]]
) {
  Deno.test({
    name:
      `socketFd finds each end of a connection to ${connectTo} on a listener on ${listenOn} and skips the fds it is told to`,
    ignore: listenOn !== "127.0.0.1" && IPV6_SKIP !== null,
    fn: async () => {
      const listener = Deno.listen({ hostname: listenOn, port: 0 });
      const port = (listener.addr as Deno.NetAddr).port;
      const client = await Deno.connect({ hostname: connectTo, port });
      const server = await listener.accept();
      try {
        const sl = server.localAddr as Deno.NetAddr, sr = server.remoteAddr as Deno.NetAddr;
        const c = socketFd(client.localAddr as Deno.NetAddr, client.remoteAddr as Deno.NetAddr);
        const s = socketFd(sl, sr);
        assert.ok(c !== undefined && s !== undefined && c !== s, `fds ${c} ${s}`);
        assert.equal(localPort(c), (client.localAddr as Deno.NetAddr).port);
        assert.equal(localPort(s), port);
        assert.equal(socketFd(sl, sr, new Set([s])), undefined, "a skipped fd is not returned");
        // the same ports from another peer address: no socket matches
        const other = { ...sr, hostname: sr.hostname.includes(":") ? "::2" : "127.0.0.2" };
        assert.equal(socketFd(sl, other), undefined);
      } finally {
        client.close();
        server.close();
        listener.close();
      }
    },
  });
}
