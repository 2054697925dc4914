import assert from "node:assert/strict";
import { relayArgs } from "./link.ts";
import { parseLinkSpec } from "./link_spec.ts";
import { netemQdiscArgs } from "./netem.ts";

function argValue(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

Deno.test("relayArgs passes each direction's settings in the relay's units", () => {
  const args = relayArgs(parseLinkSpec("lossy,up.rate=10mbit,up.queue=25,blackhole=5s/2s"), 7);
  assert.equal(argValue(args, "--seed"), "7");
  assert.equal(argValue(args, "--up-delay-us"), "25000");
  assert.equal(argValue(args, "--down-delay-us"), "25000");
  assert.equal(argValue(args, "--up-loss"), "0.02");
  assert.equal(argValue(args, "--down-burst"), "3");
  assert.equal(argValue(args, "--up-rate-bps"), "10000000");
  assert.equal(argValue(args, "--down-rate-bps"), "0");
  assert.equal(argValue(args, "--up-queue"), "25");
  assert.equal(argValue(args, "--down-bh-on-us"), "5000000");
  assert.equal(argValue(args, "--up-bh-off-us"), "2000000");
  assert.equal(relayArgs(parseLinkSpec("lan"), 1).includes("--up-bh-on-us"), false);
});

Deno.test("netemQdiscArgs maps delay, jitter, loss bursts, rate and queue", () => {
  const spec = parseLinkSpec("delay=15ms,jitter=1ms,rate=10mbit,queue=25,loss=2%,burst=3");
  const args = netemQdiscArgs("sbl-x-c", spec.up);
  assert.deepEqual(args.slice(0, 6), ["qdisc", "add", "dev", "sbl-x-c", "root", "netem"]);
  assert.deepEqual(args.slice(6, 9), ["delay", "15000us", "1000us"]);
  const ge = args.indexOf("gemodel");
  assert.ok(ge > 0);
  // mean burst 2 → leave bad state with r = 50 %; p chosen so the bad share is 2 %
  const p = parseFloat(args[ge + 1]) / 100;
  const r = parseFloat(args[ge + 2]) / 100;
  assert.equal(r, 0.5);
  assert.ok(Math.abs(p / (p + r) - 0.02) < 1e-6);
  assert.equal(argValue(args, "rate"), "10000000bit");
  assert.equal(argValue(args, "limit"), "25");
  const plain = netemQdiscArgs("d", parseLinkSpec("loss=1%").up);
  assert.deepEqual(plain.slice(6), ["loss", "1%", "limit", "100000"]);
});
