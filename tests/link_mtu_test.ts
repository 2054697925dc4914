/**
 * `--mtu`: a plain veth pair (no relay, no qdisc) whose two ends carry the
 * MTU asked for, so nothing but the packet size differs from loopback.
 */
import assert from "node:assert/strict";
import { openLink, parseLinkSpec } from "../linkemu/mod.ts";
import { LINK_SKIP } from "../linkemu/_test_util.ts";

const ignore = LINK_SKIP !== null;

async function deviceMtu(ns: string, dev: string): Promise<number> {
  const out = await new Deno.Command("ip", { args: ["-n", ns, "-j", "link", "show", "dev", dev] })
    .output();
  assert.ok(out.success, `ip link show ${dev} in ${ns} failed`);
  return JSON.parse(new TextDecoder().decode(out.stdout))[0].mtu;
}

Deno.test({
  name: "a veth link carries the MTU asked for on both ends and runs no relay",
  ignore,
  async fn() {
    await using link = await openLink(parseLinkSpec("lan"), { backend: "veth", mtu: 1400 });
    assert.equal(link.relayPid, undefined);
    assert.equal(await deviceMtu(link.clientNs, link.clientIf), 1400);
    assert.equal(await deviceMtu(link.serverNs, link.serverIf), 1400);
    const qdisc = await new Deno.Command("tc", {
      args: ["-n", link.clientNs, "qdisc", "show", "dev", link.clientIf],
    }).output();
    assert.doesNotMatch(new TextDecoder().decode(qdisc.stdout), /netem/);
  },
});

Deno.test({
  name: "the veth backend refuses a spec with delay or loss, and a bad MTU, with one line",
  ignore,
  async fn() {
    await assert.rejects(
      openLink(parseLinkSpec("wan"), { backend: "veth" }),
      /The veth backend emulates no delay, loss or rate/,
    );
    await assert.rejects(
      openLink(parseLinkSpec("lan"), { backend: "veth", mtu: 900 }),
      /Link MTU must be a whole number of bytes in 1280…65535, got 900/,
    );
  },
});
