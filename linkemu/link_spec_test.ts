import assert from "node:assert/strict";
import { DEFAULT_QUEUE, formatLinkSpec, LINK_PROFILES, parseLinkSpec } from "./link_spec.ts";

Deno.test("parseLinkSpec splits rtt evenly and reads every key with its unit", () => {
  const s = parseLinkSpec("rtt=50ms,loss=1%,burst=3,rate=10mbit,queue=25,jitter=2ms");
  for (const d of [s.up, s.down]) {
    assert.equal(d.delayMs, 25);
    assert.equal(d.loss, 0.01);
    assert.equal(d.burst, 3);
    assert.equal(d.rateBps, 10_000_000);
    assert.equal(d.queue, 25);
    assert.equal(d.jitterMs, 2);
  }
  assert.equal(s.blackhole, undefined);
});

Deno.test("parseLinkSpec applies a profile and then overrides in order", () => {
  const s = parseLinkSpec("wan,loss=1%,delay=10ms");
  assert.equal(s.profile, "wan");
  assert.equal(s.up.loss, 0.01);
  assert.equal(s.up.delayMs, 10);
  assert.equal(s.down.delayMs, 10);
  const later = parseLinkSpec("delay=10ms,rtt=8ms");
  assert.equal(later.up.delayMs, 4);
});

Deno.test("parseLinkSpec keeps per-direction overrides on their own side", () => {
  const s = parseLinkSpec("lossy,up.loss=5%,down.rate=2mbit,down.delay=750us");
  assert.equal(s.up.loss, 0.05);
  assert.equal(s.down.loss, 0.02);
  assert.equal(s.up.rateBps, 0);
  assert.equal(s.down.rateBps, 2_000_000);
  assert.equal(s.down.delayMs, 0.75);
  assert.equal(s.up.delayMs, 25);
});

Deno.test("every named profile parses and the documented ones carry their figures", () => {
  for (const name of Object.keys(LINK_PROFILES)) assert.equal(parseLinkSpec(name).profile, name);
  const lan = parseLinkSpec("lan");
  assert.deepEqual(lan.up, lan.down);
  assert.equal(lan.up.delayMs + lan.up.loss + lan.up.rateBps, 0);
  assert.equal(parseLinkSpec("metro").up.delayMs * 2, 5);
  const lossy = parseLinkSpec("lossy");
  assert.equal(lossy.up.loss, 0.02);
  assert.equal(lossy.up.burst, 3);
  const qir = parseLinkSpec("qir");
  assert.deepEqual([qir.up.delayMs, qir.up.rateBps, qir.up.queue], [15, 10_000_000, 25]);
  assert.equal(parseLinkSpec("handshakeloss").down.loss, 0.3);
  assert.equal(parseLinkSpec("longrtt").up.delayMs, 750);
  assert.deepEqual(parseLinkSpec("blackhole").blackhole, { onMs: 5000, offMs: 2000 });
  assert.equal(parseLinkSpec("rate=1mbit").up.queue, DEFAULT_QUEUE);
});

Deno.test("parseLinkSpec rejects bad input with a one-line message naming the key", () => {
  const cases: [string, ErrorConstructor, RegExp][] = [
    ["", SyntaxError, /Empty/],
    ["wam", RangeError, /profile "wam"/],
    ["rtt=50ms,wan", SyntaxError, /"wan" must come first/],
    ["loss=1", RangeError, /loss/],
    ["loss=100%", RangeError, /loss/],
    ["up.loss=x", RangeError, /up\.loss/],
    ["rtt=50", RangeError, /rtt/],
    ["rate=10mbps", RangeError, /rate/],
    ["queue=2.5", RangeError, /queue/],
    ["colour=red", RangeError, /"colour"/],
    ["up.rtt=5ms", RangeError, /"up\.rtt"/],
    ["sideways.loss=1%", RangeError, /"sideways\.loss"/],
    ["blackhole=5s", RangeError, /blackhole/],
    ["=5ms", SyntaxError, /key=value/],
    ["delay=", SyntaxError, /key=value/],
  ];
  for (const [text, type, pattern] of cases) {
    assert.throws(() => parseLinkSpec(text), (err: Error) => {
      assert.ok(err instanceof type, `${text}: ${err.name}`);
      assert.match(err.message, pattern, text);
      assert.ok(!err.message.includes("\n"));
      return true;
    });
  }
});

Deno.test("formatLinkSpec round-trips through parseLinkSpec", () => {
  for (
    const text of [
      "lan",
      "wan",
      "lossy,jitter=1ms",
      "blackhole",
      "qir,up.loss=3%,reorder=1%,dup=0.5%,seed=7",
      "down.rate=1.5mbit,down.queue=30",
    ]
  ) {
    const spec = parseLinkSpec(text);
    const again = parseLinkSpec(formatLinkSpec(spec));
    assert.deepEqual(again.up, spec.up, text);
    assert.deepEqual(again.down, spec.down, text);
    assert.deepEqual(again.blackhole, spec.blackhole, text);
    assert.equal(again.seed, spec.seed, text);
  }
  assert.equal(formatLinkSpec(parseLinkSpec("wan")), "delay=25ms,loss=0.1%");
});
