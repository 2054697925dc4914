import assert from "node:assert/strict";
import { LINK_SKIP } from "./_test_util.ts";
import { openPodNet, PodNet } from "./pods.ts";
import { listNamespaces, run } from "./_system.ts";

async function deviceExists(name: string): Promise<boolean> {
  return await run("ip", ["link", "show", name]).then(() => true, () => false);
}

Deno.test({
  name: "a pod net gives each pod its own address and removes every namespace and device it made",
  ignore: LINK_SKIP !== null,
}, async () => {
  const net = await openPodNet(2);
  const names = net.pods.map((p) => p.ns);
  try {
    assert.notEqual(net.pods[0].addr, net.pods[1].addr);
    const addr = await run("ip", ["-n", net.pods[1].ns, "-4", "addr", "show", "eth0"]);
    assert.match(addr, new RegExp(`inet ${net.pods[1].addr.replaceAll(".", "\\.")}/24`));
    // a pod's way to the bridge's address is its own veth, on the bridge's subnet
    const route = await run("ip", ["-n", net.pods[0].ns, "route", "get", net.hostAddr]);
    assert.match(route, new RegExp(`dev eth0 src ${net.pods[0].addr.replaceAll(".", "\\.")}`));
  } finally {
    await net.close();
  }
  const left = await listNamespaces();
  for (const ns of names) assert.ok(!left.includes(ns), `${ns} removed`);
  assert.equal(await deviceExists(net.bridge), false);
  for (const p of net.pods) assert.equal(await deviceExists(p.hostIf), false);
});

Deno.test({
  name: "a pod net that fails half-way removes what it made and only that",
  ignore: LINK_SKIP !== null,
}, async () => {
  const id = `f${(Deno.pid % 0x1000).toString(16).padStart(3, "0")}ff`;
  const net = new PodNet(id, 254, 3);
  // someone else's namespace holds pod 1's name: setting up stops there
  await run("ip", ["netns", "add", net.pods[1].ns]);
  try {
    await assert.rejects(() => net.setUp(), /netns add/);
    const left = await listNamespaces();
    assert.ok(!left.includes(net.pods[0].ns), "pod 0's namespace removed");
    assert.ok(left.includes(net.pods[1].ns), "the namespace it did not make is left alone");
    assert.equal(await deviceExists(net.bridge), false);
    assert.equal(await deviceExists(net.pods[0].hostIf), false);
  } finally {
    await run("ip", ["netns", "del", net.pods[1].ns]).catch(() => {});
  }
});
