import assert from "node:assert/strict";
import { relayArgs } from "./relay.ts";
import { parseLinkSpec } from "./link_spec.ts";

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
