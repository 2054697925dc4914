import assert from "node:assert/strict";
import {
  ClientCore,
  type CoreSession,
  DEFAULT_TIMEOUT_MS,
  type PendingRequest,
  PendingStreams,
  requestTimeoutMs,
  timedRequest,
} from "./client_core.ts";
import { type ClientResponse, TimeoutError, TransportError } from "./types.ts";

class FakeSession implements CoreSession {
  unusable = false;
  streamCount = 0;
  closes = 0;
  close(): Promise<void> {
    this.closes++;
    this.unusable = true;
    return Promise.resolve();
  }
}

const ok: ClientResponse = { status: 200, headers: {}, body: new Uint8Array(0) };

Deno.test("client core reuses the open session and reconnects once it is unusable", async () => {
  const made: FakeSession[] = [];
  const core = new ClientCore(() => {
    const s = new FakeSession();
    made.push(s);
    return Promise.resolve(s);
  });
  const first = await core.session();
  assert.equal(core.session(), first); // synchronous while usable
  first.unusable = true;
  const second = await core.session();
  assert(second !== first);
  assert.equal(first.closes, 1);
  assert.equal(core.last, second);
  assert.equal(made.length, 2);
  await core.close();
});

Deno.test("client core makes one connection attempt for concurrent requests", async () => {
  let attempts = 0;
  const { promise: gate, resolve: open } = Promise.withResolvers<FakeSession>();
  const core = new ClientCore(() => {
    attempts++;
    return gate;
  });
  const a = core.session(), b = core.session();
  open(new FakeSession());
  assert.equal(await a, await b);
  assert.equal(attempts, 1);
  await core.close();
});

Deno.test("client core passes on a failed attempt and tries again on the next request", async () => {
  let attempts = 0;
  const core = new ClientCore(() => {
    attempts++;
    return attempts === 1
      ? Promise.reject(new TransportError("refused"))
      : Promise.resolve(new FakeSession());
  });
  await assert.rejects(
    async () => await core.session(),
    (e) => e instanceof TransportError && e.message.includes("refused"),
  );
  assert((await core.session()) instanceof FakeSession);
  await core.close();
});

Deno.test("client core close is idempotent and closes a session that connects meanwhile", async () => {
  const s = new FakeSession();
  const { promise: gate, resolve: open } = Promise.withResolvers<FakeSession>();
  let closing = 0;
  const core = new ClientCore(() => gate, { onClosing: () => closing++ });
  const pending = core.session();
  const closed = core.close();
  open(s);
  await assert.rejects(
    async () => await pending,
    (e) => e instanceof TransportError && e.message.includes("Client is closed"),
  );
  await closed;
  await core.close();
  assert.equal(closing, 1);
  assert.equal(s.closes, 1);
  assert(core.closed);
  assert.equal(core.current, undefined);
});

Deno.test("client core shows the open session to onDetach before closing it", async () => {
  const s = new FakeSession();
  s.streamCount = 3;
  let seen: FakeSession | undefined;
  const core = new ClientCore(() => Promise.resolve(s), {
    onDetach: (d) => (seen = d.closes === 0 ? d : undefined),
  });
  await core.session();
  assert.equal(core.openStreams, 3);
  await core.close();
  assert.equal(seen, s);
  assert.equal(core.openStreams, 0);
});

Deno.test("timed request rejects with TimeoutError after cancelling its stream", async () => {
  let cancelled = 0;
  const t = timedRequest(10, () => cancelled++);
  await assert.rejects(
    () => t.promise,
    (e) => e instanceof TimeoutError && e.message.includes("after 10 ms"),
  );
  assert.equal(cancelled, 1);
  assert(t.settled());
  // An answer or a failure arriving after the timeout changes nothing: no second cancel,
  // and the request stays timed out.
  t.pending.resolve(ok);
  t.pending.reject(new Error("late"));
  assert.equal(cancelled, 1);
  await assert.rejects(() => t.promise, TimeoutError);
});

Deno.test("timed request settles once and stops its timer", async () => {
  let cancelled = 0;
  const t = timedRequest(60_000, () => cancelled++);
  assert(!t.settled());
  t.pending.resolve(ok);
  t.pending.reject(new Error("late"));
  assert.equal(await t.promise, ok);
  assert.equal(cancelled, 0);
});

Deno.test("request timeout falls back from the request to the client to the default", () => {
  assert.equal(requestTimeoutMs({ timeoutMs: 7 }, { timeoutMs: 9 }), 7);
  assert.equal(requestTimeoutMs({}, { timeoutMs: 9 }), 9);
  assert.equal(requestTimeoutMs({}, {}), DEFAULT_TIMEOUT_MS);
});

Deno.test("pending streams hand each request to one event and reject the rest on failure", async () => {
  const table = new PendingStreams();
  const a = timedRequest(60_000, () => {}), b = timedRequest(60_000, () => {});
  table.add(1, a.pending);
  table.add(3, b.pending);
  table.take(1)?.resolve(ok);
  assert.equal(table.take(1), undefined);
  assert.equal(table.size, 1);
  table.rejectAll(new TransportError("gone"));
  assert.equal(table.size, 0);
  assert.equal(await a.promise, ok);
  await assert.rejects(
    () => b.promise,
    (e) => e instanceof TransportError && e.message.includes("gone"),
  );
});

Deno.test("pending streams find every request among thousands in flight and drain them oldest first", () => {
  const table = new PendingStreams<{ id: number } & PendingRequest>();
  const req = (id: number) => ({ id, resolve() {}, reject() {} });
  // A stuck request on stream 0 while 100,000 later ones (h3 ids, every fourth) come and go,
  // up to 1,000 at a time: it is still there at the end, and nothing else is lost.
  table.add(0, req(0));
  let next = 4;
  const live: number[] = [];
  for (let round = 0; round < 100; round++) {
    for (let i = 0; i < 1000; i++, next += 4) {
      table.add(next, req(next));
      live.push(next);
    }
    assert.equal(table.size, 1001);
    // Answers in a shuffled order within the round.
    for (let i = live.length - 1; i > 0; i--) {
      const j = (i * 7919) % (i + 1);
      [live[i], live[j]] = [live[j], live[i]];
    }
    for (const id of live) assert.equal(table.take(id)?.id, id);
    assert.equal(table.take(live[0]), undefined);
    live.length = 0;
  }
  assert.equal(table.size, 1);
  for (const id of [next + 8, next, next + 4]) table.add(id, req(id));
  assert.equal(table.delete(next + 4), true);
  assert.equal(table.delete(next + 4), false);
  assert.deepEqual(table.drain().map((r) => r.id), [0, next, next + 8]);
  assert.equal(table.size, 0);
  assert.equal(table.take(0), undefined);
});
