import assert from "node:assert/strict";
import { createHandler, DEFAULT_MAX_BODY_BYTES, type Sleep } from "./handler.ts";
import { buildMultipart } from "./multipart.ts";
import { createMemoryNfProfileStore } from "./nrf.ts";
import { MAX_PAYLOAD_BYTES } from "./payload.ts";
import { json, request, send, text } from "./_test_util.ts";
import type { SbiRequest } from "./types.ts";

const decoder = new TextDecoder();

/** A manual clock whose sleeps fire only when the test advances time. */
function fakeTime() {
  let t = 1_000_000;
  const timers = new Set<{ at: number; resolve: () => void }>();
  const sleep: Sleep = (ms, signal) =>
    new Promise((resolve, reject) => {
      const timer = { at: t + ms, resolve };
      timers.add(timer);
      signal.addEventListener("abort", () => {
        timers.delete(timer);
        reject(signal.reason);
      }, { once: true });
    });
  const settle = () => new Promise((r) => setTimeout(r, 0));
  return {
    now: () => t,
    sleep,
    pending: () => timers.size,
    elapsed: () => t - 1_000_000,
    async advance(ms: number) {
      await settle();
      t += ms;
      for (const timer of [...timers].sort((a, b) => a.at - b.at)) {
        if (timer.at <= t) {
          timers.delete(timer);
          timer.resolve();
        }
      }
      await settle();
    },
  };
}

for (const size of [1, 2, 255, 256, 16384, 1024 * 1024, MAX_PAYLOAD_BYTES]) {
  Deno.test(`GET payload?size=${size} answers 200 with exactly ${size} bytes of JSON`, async () => {
    const res = await send(createHandler(), "GET", `/nbench/v1/payload?size=${size}`);
    assert.equal(res.status, 200);
    assert.equal(res.headers["content-type"], "application/json");
    assert.equal(res.body.length, size);
    JSON.parse(decoder.decode(res.body));
  });
}

Deno.test("GET payload answers identical bytes to repeated requests and to other handlers", async () => {
  const a = await send(createHandler(), "GET", "/nbench/v1/payload?size=300");
  const b = await send(createHandler(), "GET", "/nbench/v1/payload?size=300");
  assert.deepEqual(a, b);
});

Deno.test("GET payload with size 0, 16 MiB + 1, non-numeric or fractional is 400", async () => {
  const h = createHandler();
  for (const size of ["0", String(MAX_PAYLOAD_BYTES + 1), "abc", "1.5", "-1", "1e3", ""]) {
    const res = await send(h, "GET", `/nbench/v1/payload?size=${size}`);
    assert.equal(res.status, 400, size);
    assert.equal(res.headers["content-type"], "application/problem+json");
    const body = json(res);
    assert.equal(body.cause, "MANDATORY_QUERY_PARAM_INCORRECT", size);
    assert.equal((body.invalidParams as { param: string }[])[0].param, "query size");
  }
});

Deno.test("GET payload without size is 400 MANDATORY_QUERY_PARAM_MISSING", async () => {
  const res = await send(createHandler(), "GET", "/nbench/v1/payload");
  assert.equal(res.status, 400);
  assert.equal(json(res).cause, "MANDATORY_QUERY_PARAM_MISSING");
  assert.deepEqual(json(res).invalidParams, [
    { param: "query size", reason: "mandatory query parameter missing" },
  ]);
});

Deno.test("POST echo returns the body and content-type unchanged", async () => {
  const h = createHandler();
  const body = new Uint8Array([0, 255, 1, 254, 13, 10]);
  const res = await send(h, "POST", "/nbench/v1/echo", {
    body,
    headers: { "content-type": "application/vnd.3gpp.ngap" },
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers["content-type"], "application/vnd.3gpp.ngap");
  assert.deepEqual([...res.body], [...body]);

  const bare = await send(h, "POST", "/nbench/v1/echo", { body: "x" });
  assert.equal(bare.headers["content-type"], "application/octet-stream");
  assert.equal(text(bare), "x");

  const empty = await send(h, "POST", "/nbench/v1/echo");
  assert.equal(empty.status, 200);
  assert.equal(empty.body.length, 0);
});

Deno.test("POST echo of a valid multipart/related body returns it unchanged", async () => {
  const ct = "multipart/related; boundary=xyz";
  const body = buildMultipart([
    { headers: { "content-type": "application/json" }, body: new TextEncoder().encode("{}") },
    { headers: { "content-type": "application/vnd.3gpp.ngap" }, body: new Uint8Array([1, 2]) },
  ], "xyz");
  const res = await send(createHandler(), "POST", "/nbench/v1/echo", {
    body,
    headers: { "content-type": ct },
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers["content-type"], ct);
  assert.deepEqual(res.body, body);
});

Deno.test("an invalid multipart/related body is 400 INVALID_MSG_FORMAT", async () => {
  const res = await send(createHandler(), "POST", "/nbench/v1/echo", {
    body: "--xyz\r\nContent-Type: a/b\r\n\r\nnever closed",
    headers: { "content-type": "multipart/related; boundary=xyz" },
  });
  assert.equal(res.status, 400);
  assert.equal(json(res).cause, "INVALID_MSG_FORMAT");
});

Deno.test("unknown resources are 404 RESOURCE_URI_STRUCTURE_NOT_FOUND", async () => {
  const h = createHandler();
  for (const path of ["/", "/nope", "/nbench/v1/nothing", "/nnrf-nfm/v1/nf-instances/a/b"]) {
    const res = await send(h, "GET", path);
    assert.equal(res.status, 404, path);
    assert.equal(json(res).cause, "RESOURCE_URI_STRUCTURE_NOT_FOUND", path);
    assert.equal(json(res).instance, path);
  }
});

Deno.test("a known API in an unsupported version is 400 INVALID_API", async () => {
  const res = await send(createHandler(), "GET", "/nbench/v2/payload?size=1");
  assert.equal(res.status, 400);
  assert.equal(json(res).cause, "INVALID_API");
});

Deno.test("a wrong method is 405 with an Allow header listing the resource's methods", async () => {
  const h = createHandler();
  const one = await send(h, "DELETE", "/nbench/v1/payload?size=1");
  assert.equal(one.status, 405);
  assert.equal(one.headers.allow, "GET");
  assert.equal(one.headers["content-type"], "application/problem+json");
  const many = await send(h, "POST", "/nnrf-nfm/v1/nf-instances/x");
  assert.equal(many.status, 405);
  assert.equal(many.headers.allow, "DELETE, GET, PATCH, PUT");
  assert.equal((await send(h, "GET", "/nbench/v1/echo")).headers.allow, "POST");
});

Deno.test("a body over maxBodyBytes is 413, one at the limit is accepted", async () => {
  const h = createHandler({ maxBodyBytes: 10 });
  const over = await send(h, "POST", "/nbench/v1/echo", { body: new Uint8Array(11) });
  assert.equal(over.status, 413);
  assert.equal(json(over).cause, "PAYLOAD_TOO_LARGE");
  const at = await send(h, "POST", "/nbench/v1/echo", { body: new Uint8Array(10) });
  assert.equal(at.status, 200);
});

Deno.test("the default body limit admits a 16 MiB echo", async () => {
  assert.ok(DEFAULT_MAX_BODY_BYTES > MAX_PAYLOAD_BYTES);
  const body = new Uint8Array(MAX_PAYLOAD_BYTES);
  const res = await send(createHandler(), "POST", "/nbench/v1/echo", { body });
  assert.equal(res.status, 200);
  assert.equal(res.body.length, MAX_PAYLOAD_BYTES);
});

Deno.test("a route exception is 500 SYSTEM_FAILURE, reported to onError, with no details on the wire", async () => {
  const failure = new Error("database exploded at /secret/path.ts:12");
  const store = createMemoryNfProfileStore();
  store.get = () => {
    throw failure;
  };
  const seen: [unknown, SbiRequest][] = [];
  const h = createHandler({ store, onError: (err, req) => seen.push([err, req]) });
  const req = request("GET", "/nnrf-nfm/v1/nf-instances/x");
  const res = await h(req);
  assert.equal(res.status, 500);
  assert.equal(res.headers["content-type"], "application/problem+json");
  assert.equal(json(res).cause, "SYSTEM_FAILURE");
  assert.doesNotMatch(text(res), /exploded|secret|\.ts|at /);
  assert.equal(seen.length, 1);
  assert.equal(seen[0][0], failure);
  assert.equal(seen[0][1], req);
});

Deno.test("a throwing onError hook still yields a 500", async () => {
  const store = createMemoryNfProfileStore();
  store.list = () => {
    throw new Error("boom");
  };
  const h = createHandler({
    store,
    onError: () => {
      throw new Error("hook failed too");
    },
  });
  const res = await send(h, "GET", "/nnrf-nfm/v1/nf-instances");
  assert.equal(res.status, 500);
});

Deno.test("3gpp-Sbi-Message-Priority is echoed on success and on errors", async () => {
  const h = createHandler();
  const headers = { "3gpp-sbi-message-priority": "12" };
  const ok = await send(h, "GET", "/nbench/v1/payload?size=4", { headers });
  assert.equal(ok.headers["3gpp-sbi-message-priority"], "12");
  assert.equal(ok.headers["content-type"], "application/json");
  const err = await send(h, "GET", "/nope", { headers });
  assert.equal(err.headers["3gpp-sbi-message-priority"], "12");
  const none = await send(h, "GET", "/nbench/v1/payload?size=4");
  assert.equal(none.headers["3gpp-sbi-message-priority"], undefined);
});

Deno.test("echoing priority does not leak the header into later responses", async () => {
  const h = createHandler();
  await send(h, "GET", "/nbench/v1/payload?size=9", {
    headers: { "3gpp-sbi-message-priority": "3" },
  });
  const later = await send(h, "GET", "/nbench/v1/payload?size=9");
  assert.equal(later.headers["3gpp-sbi-message-priority"], undefined);
});

Deno.test("delayMs holds /nbench/ answers for the delay and leaves other APIs alone", async () => {
  const time = fakeTime();
  const h = createHandler({ delayMs: 50, now: time.now, sleep: time.sleep });
  let done = false;
  const pending = send(h, "GET", "/nbench/v1/payload?size=8").then((r) => (done = true, r));
  await time.advance(49);
  assert.equal(done, false);
  await time.advance(1);
  assert.equal((await pending).status, 200);

  const nrf = await send(h, "GET", "/nnrf-nfm/v1/nf-instances");
  assert.equal(nrf.status, 200);
  assert.equal(time.pending(), 0);
});

Deno.test("a delay beyond 3gpp-Sbi-Max-Rsp-Time answers 504 TIMED_OUT_REQUEST at the max time", async () => {
  const time = fakeTime();
  const h = createHandler({ delayMs: 1000, now: time.now, sleep: time.sleep });
  let at: number | undefined;
  const pending = send(h, "GET", "/nbench/v1/payload?size=8", {
    headers: { "3gpp-sbi-max-rsp-time": "100", "3gpp-sbi-message-priority": "5" },
  }).then((r) => (at = time.elapsed(), r));
  await time.advance(99);
  assert.equal(at, undefined);
  await time.advance(1);
  const res = await pending;
  assert.equal(at, 100);
  assert.equal(res.status, 504);
  assert.equal(json(res).cause, "TIMED_OUT_REQUEST");
  assert.equal(res.headers["3gpp-sbi-message-priority"], "5");
  assert.equal(time.pending(), 0, "the delay timer is cancelled");
});

Deno.test("an answer within 3gpp-Sbi-Max-Rsp-Time is sent and the deadline timer cancelled", async () => {
  const time = fakeTime();
  const h = createHandler({ delayMs: 40, now: time.now, sleep: time.sleep });
  const pending = send(h, "GET", "/nbench/v1/payload?size=8", {
    headers: { "3gpp-sbi-max-rsp-time": "100" },
  });
  await time.advance(40);
  const res = await pending;
  assert.equal(res.status, 200);
  assert.equal(text(res), '{"p":""}');
  assert.equal(time.pending(), 0);
});

Deno.test("an answer ready after the max response time by the clock is replaced by 504", async () => {
  let calls = 0;
  const h = createHandler({ now: () => (calls++ === 0 ? 0 : 150) });
  const res = await send(h, "GET", "/nbench/v1/payload?size=8", {
    headers: { "3gpp-sbi-max-rsp-time": "100" },
  });
  assert.equal(res.status, 504);
});

Deno.test("the default timer sleep answers 504 near the max time and leaves no timer behind", async () => {
  const h = createHandler({ delayMs: 5000 });
  const started = performance.now();
  const res = await send(h, "GET", "/nbench/v1/payload?size=8", {
    headers: { "3gpp-sbi-max-rsp-time": "20" },
  });
  const took = performance.now() - started;
  assert.equal(res.status, 504);
  assert.ok(took >= 15 && took < 1000, `took ${took} ms`);
});

Deno.test("a malformed 3gpp-Sbi-Max-Rsp-Time is 400 naming the header", async () => {
  const res = await send(createHandler(), "GET", "/nbench/v1/payload?size=8", {
    headers: { "3gpp-sbi-max-rsp-time": "soon" },
  });
  assert.equal(res.status, 400);
  assert.deepEqual(json(res).invalidParams, [
    { param: "header 3gpp-Sbi-Max-Rsp-Time", reason: "must be an integer" },
  ]);
});

Deno.test("error responses are the same bytes every time", async () => {
  const a = await send(createHandler(), "GET", "/nnrf-disc/v1/nf-instances");
  const b = await send(createHandler(), "GET", "/nnrf-disc/v1/nf-instances");
  assert.deepEqual(a.body, b.body);
  assert.equal(a.status, 400);
});

Deno.test("a request answered at once arms no deadline timer (hot path stays timer-free)", async () => {
  let sleeps = 0;
  const h = createHandler({
    sleep: () => {
      sleeps++;
      return new Promise(() => {});
    },
  });
  const res = await send(h, "GET", "/nbench/v1/payload?size=256", {
    headers: { "3gpp-sbi-max-rsp-time": "100" },
  });
  assert.equal(res.status, 200);
  assert.equal(sleeps, 0);
});
