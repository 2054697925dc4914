import assert from "node:assert/strict";
import { EventPoller, type PollCall } from "./event_poller.ts";
import { NATIVE_ERR } from "./errors.ts";
import { decodeHeaderBlock, encodeHeaderBlock, EVENT_HEADER_LEN } from "./wire.ts";

interface Ev {
  type: number;
  connId: number;
  streamId: bigint;
  code: bigint;
  block: Uint8Array;
  body: Uint8Array;
}

/** A poll call that writes `batches` (each: events written by one call) as the modules do. */
function fakePoll(batches: Ev[][]): PollCall {
  return (buf, cap) => {
    const batch = batches[0];
    if (!batch) return NATIVE_ERR.DONE;
    const size = (e: Ev) => EVENT_HEADER_LEN + e.block.length + e.body.length;
    const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    if (size(batch[0]) > cap) {
      v.setBigUint64(0, BigInt(size(batch[0])), true);
      return NATIVE_ERR.BUFFER_TOO_SHORT;
    }
    let off = 0;
    for (const e of batch) {
      v.setUint32(off, e.type, true);
      v.setUint32(off + 4, e.connId, true);
      v.setBigInt64(off + 8, e.streamId, true);
      v.setBigInt64(off + 16, e.code, true);
      v.setUint32(off + 24, e.block.length, true);
      v.setUint32(off + 28, e.body.length, true);
      buf.set(e.block, off + EVENT_HEADER_LEN);
      buf.set(e.body, off + EVENT_HEADER_LEN + e.block.length);
      off += size(e);
    }
    batches.shift();
    return off;
  };
}

const block = encodeHeaderBlock([[":status", "200"]]);

Deno.test("event poller hands over every record of a batch with whole i64 fields", () => {
  const poll = fakePoll([[
    { type: 2, connId: 0, streamId: 1n, code: 0n, block, body: new Uint8Array([1, 2]) },
    {
      type: 4,
      connId: 9,
      streamId: -1n,
      code: 2n ** 40n + 7n,
      block: new Uint8Array(0),
      body: new Uint8Array(0),
    },
  ]]);
  const seen: unknown[] = [];
  const n = new EventPoller().poll(poll, (type, streamId, code, b, body, owned, connId) => {
    seen.push({
      type,
      streamId,
      code,
      headers: decodeHeaderBlock(b),
      body: [...body],
      owned,
      connId,
    });
  });
  assert.equal(n, 2);
  assert.deepEqual(seen, [
    {
      type: 2,
      streamId: 1,
      code: 0,
      headers: [[":status", "200"]],
      body: [1, 2],
      owned: false,
      connId: 0,
    },
    { type: 4, streamId: -1, code: 2 ** 40 + 7, headers: [], body: [], owned: false, connId: 9 },
  ]);
});

Deno.test("event poller gives an event larger than its buffer a buffer of its own", () => {
  const body = new Uint8Array(5000).fill(7);
  const poll = fakePoll([[{ type: 2, connId: 3, streamId: 5n, code: 0n, block, body }]]);
  let got: Uint8Array | undefined;
  let owned = false;
  const n = new EventPoller({ bufferBytes: 1024 }).poll(poll, (_t, _s, _c, _b, b, o) => {
    got = b;
    owned = o;
  });
  assert.equal(n, 1);
  assert.ok(owned);
  assert.deepEqual(got, body);
});

Deno.test("event poller stops after the expected count and throws the caller's error on failure", () => {
  const e = { type: 2, connId: 0, streamId: 1n, code: 0n, block, body: new Uint8Array(0) };
  const batches = [[e], [e], [e]];
  const poller = new EventPoller({ error: (code) => new TypeError(`failed ${code}`) });
  assert.equal(poller.poll(fakePoll(batches), () => {}, 2), 2);
  assert.equal(batches.length, 1);
  assert.throws(
    () => poller.poll(() => NATIVE_ERR.NOMEM, () => {}),
    (err) => err instanceof TypeError && err.message === "failed -4",
  );
  assert.equal(poller.poll(() => NATIVE_ERR.CLOSED, () => assert.fail("no event")), 0);
});
