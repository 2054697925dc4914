import assert from "node:assert/strict";
import { parseLinkSpec } from "./link_spec.ts";
import { netemQdiscArgs } from "./netem.ts";

function argValue(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

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
