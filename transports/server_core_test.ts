import assert from "node:assert/strict";
import { REFUSED, type SbiRequest, type SbiResponse } from "../handler/types.ts";
import { AcceptBackoff, type Responder, ServerCore } from "./server_core.ts";
import { ByteBudget } from "./byte_budget.ts";
import type { TlsConnection } from "./tls.ts";

/** A connection that records what the core hands it. */
class Recorder implements Responder {
  got: [number, SbiResponse][] = [];
  /** Budget bytes handed over with each response. */
  reservedWith: number[] = [];
  refused: number[] = [];
  reservedBytes = 0;
  #waiters: (() => void)[] = [];
  respond(streamId: number, response: SbiResponse, reserved: number): void {
    this.got.push([streamId, response]);
    this.reservedWith.push(reserved);
    for (const w of this.#waiters.splice(0)) w();
  }
  refuse(streamId: number): void {
    this.refused.push(streamId);
    for (const w of this.#waiters.splice(0)) w();
  }
  /** Resolves once `n` responses arrived. */
  async count(n: number): Promise<void> {
    while (this.got.length + this.refused.length < n) {
      await new Promise<void>((r) => this.#waiters.push(r));
    }
  }
}

/** A decoder of test heads: the head is the method, the path is fixed. */
function decode(method: string, body: Uint8Array): SbiRequest {
  if (method === "BAD") throw new SyntaxError("Malformed request");
  return { method, path: "/x", query: new URLSearchParams(), headers: {}, body };
}

const ok = (body = "ok"): SbiResponse => ({
  status: 200,
  headers: {},
  body: new TextEncoder().encode(body),
});

Deno.test("server core runs the handler with the peer and hands its response to the connection, holding the body's bytes from the budget until then", async () => {
  const budget = new ByteBudget(100);
  let seen: SbiRequest | undefined;
  let usedDuring = -1;
  const core = new ServerCore((req) => {
    seen = req;
    usedDuring = budget.used;
    return Promise.resolve(ok("done"));
  }, { bodyBudget: budget });
  const to = new Recorder();
  core.serve(to, 7, decode, "POST", new Uint8Array(40), false, { subject: "CN=amf" });
  assert.equal(core.inflight, 1);
  await to.count(1);
  assert.equal(seen?.method, "POST");
  assert.deepEqual(seen?.peer, { subject: "CN=amf" });
  assert.equal(usedDuring, 40);
  assert.equal(budget.used, 0);
  assert.equal(core.inflight, 0);
  assert.equal(to.got[0][0], 7);
  assert.equal(new TextDecoder().decode(to.got[0][1].body), "done");
});

Deno.test("server core answers 503 without running the handler when the body does not fit the budget", () => {
  const budget = new ByteBudget(10);
  let ran = 0;
  const core = new ServerCore(() => {
    ran++;
    return Promise.resolve(ok());
  }, { bodyBudget: budget });
  const to = new Recorder();
  core.serve(to, 1, decode, "POST", new Uint8Array(11));
  assert.equal(ran, 0);
  assert.equal(to.got[0][1].status, 503);
  assert.equal(budget.used, 0);
});

Deno.test("server core answers 400 for a request it cannot decode, reports the error and gives the body's bytes back", () => {
  const budget = new ByteBudget(100);
  const errors: unknown[] = [];
  const core = new ServerCore(() => Promise.resolve(ok()), {
    bodyBudget: budget,
    onError: (e) => errors.push(e),
  });
  const to = new Recorder();
  core.serve(to, 3, decode, "BAD", new Uint8Array(5));
  assert.equal(to.got[0][1].status, 400);
  assert.ok(errors[0] instanceof SyntaxError);
  assert.equal(budget.used, 0);
});

Deno.test("server core answers a non-idempotent request from 0-RTT 425 Too Early without running it, and runs a GET from 0-RTT", async () => {
  const ran: string[] = [];
  const budget = new ByteBudget(100);
  const core = new ServerCore((req) => {
    ran.push(req.method);
    return Promise.resolve(ok());
  }, { bodyBudget: budget });
  const to = new Recorder();
  core.serve(to, 1, decode, "POST", new Uint8Array(8), true);
  core.serve(to, 2, decode, "GET", new Uint8Array(0), true);
  core.serve(to, 3, decode, "POST", new Uint8Array(0), false);
  await to.count(3);
  assert.deepEqual(ran, ["GET", "POST"]);
  assert.equal(to.got.find(([id]) => id === 1)?.[1].status, 425);
  assert.deepEqual(core.earlyRequests(), { received: 2, tooEarly: 1 });
  assert.equal(budget.used, 0);
});

Deno.test("server core answers 500 when the handler throws or rejects, and a throwing onError hook does not stop it", async () => {
  let calls = 0;
  const core = new ServerCore((req) => {
    calls++;
    if (req.method === "GET") throw new Error("sync failure");
    return Promise.reject(new Error("async failure"));
  }, {
    onError: () => {
      throw new Error("hook failure");
    },
  });
  const to = new Recorder();
  core.serve(to, 1, decode, "GET", new Uint8Array(0));
  core.serve(to, 2, decode, "PUT", new Uint8Array(0));
  await to.count(2);
  assert.equal(calls, 2);
  assert.deepEqual(to.got.map(([, r]) => r.status), [500, 500]);
  assert.equal(core.inflight, 0);
});

Deno.test("server core answers 413 and 503 for what the transport refused, naming the limits in force", () => {
  const core = new ServerCore(() => Promise.resolve(ok()), {
    maxBodyBytes: 1234,
    bodyBudget: new ByteBudget(99),
  });
  const to = new Recorder();
  core.tooLarge(to, 1);
  core.overBudget(to, 2);
  assert.equal(to.got[0][1].status, 413);
  assert.match(new TextDecoder().decode(to.got[0][1].body), /1234/);
  assert.equal(to.got[1][1].status, 503);
  assert.match(new TextDecoder().decode(to.got[1][1].body), /99 bytes/);
});

Deno.test("server core drain waits for the handler's answer, and gives up after drainMs", async () => {
  const release = Promise.withResolvers<SbiResponse>();
  const core = new ServerCore(() => release.promise, { drainMs: 60_000 });
  const to = new Recorder();
  core.serve(to, 1, decode, "GET", new Uint8Array(0));
  let pokes = 0;
  const drained = core.drain(() => false, () => pokes++);
  release.resolve(ok());
  await drained;
  assert.equal(core.inflight, 0);
  assert.equal(to.got.length, 1);
  assert.ok(pokes >= 1);

  const stuck = new ServerCore(() => new Promise(() => {}), { drainMs: 0 });
  stuck.serve(to, 2, decode, "GET", new Uint8Array(0));
  await stuck.drain(() => true);
  assert.equal(stuck.inflight, 1);
});

Deno.test("server core shows a TLS connection to onTls and reports a failing hook to onError", () => {
  const errors: unknown[] = [];
  let shown = 0;
  const core = new ServerCore(() => Promise.resolve(ok()), {
    onTls: () => {
      shown++;
      throw new Error("hook failure");
    },
    onError: (e) => errors.push(e),
  });
  core.tlsEstablished({ remoteAddr: { hostname: "127.0.0.1", port: 1 } } as TlsConnection);
  assert.equal(shown, 1);
  assert.match(String(errors[0]), /hook failure/);
});

Deno.test("server core refuses a limit that is not a positive integer", () => {
  assert.throws(
    () => new ServerCore(() => Promise.resolve(ok()), { idleTimeoutMs: 0 }),
    RangeError,
  );
});

Deno.test("accept back-off doubles from the first pause up to the cap, counts failures and starts over after a success", () => {
  const b = new AcceptBackoff(5, 40);
  assert.deepEqual([b.failed(), b.failed(), b.failed(), b.failed(), b.failed()], [
    5,
    10,
    20,
    40,
    40,
  ]);
  b.succeeded();
  assert.equal(b.failed(), 5);
  assert.equal(b.errors, 6);
  const err = AcceptBackoff.error(new Error("Too many open files (os error 24)"), 5);
  assert.equal(
    err.message,
    "Accepting connections failed: Too many open files (os error 24); retrying in 5 ms",
  );
  assert.throws(() => new AcceptBackoff(10, 5), RangeError);
});

Deno.test("server core: a handler reserves its response before building it; without room the stream is refused and nothing built", async () => {
  const budget = new ByteBudget(20 * 1024 * 1024);
  let built = 0;
  const core = new ServerCore((req) => {
    const size = Number(req.query.get("size"));
    if (req.reserve && !req.reserve(size)) return Promise.resolve(REFUSED);
    built++;
    return Promise.resolve({ status: 200, headers: {}, body: new Uint8Array(size) });
  }, { responseBudget: budget });
  const decodeSize = (size: string): SbiRequest => ({
    method: "GET",
    path: "/p",
    query: new URLSearchParams({ size }),
    headers: {},
    body: new Uint8Array(0),
  });
  const a = new Recorder();
  const b = new Recorder();
  // One connection's share is a quarter of the budget: 4 MiB fits, 2 MiB more does not.
  core.serve(a, 1, decodeSize, String(4 * 1024 * 1024), new Uint8Array(0));
  core.serve(a, 3, decodeSize, String(2 * 1024 * 1024), new Uint8Array(0));
  await a.count(2);
  assert.deepEqual(a.refused, [3]);
  assert.equal(a.reservedWith[0], 4 * 1024 * 1024);
  assert.equal(a.reservedBytes, 4 * 1024 * 1024);
  // More connections fill the budget up to the eighth kept for small answers (17.5 MiB).
  const c = new Recorder();
  const d = new Recorder();
  core.serve(b, 1, decodeSize, String(5 * 1024 * 1024), new Uint8Array(0));
  core.serve(c, 1, decodeSize, String(5 * 1024 * 1024), new Uint8Array(0));
  core.serve(d, 1, decodeSize, String(4 * 1024 * 1024), new Uint8Array(0));
  await Promise.all([b.count(1), c.count(1), d.count(1)]);
  assert.deepEqual(d.refused, [1]);
  // A small answer still fits.
  core.serve(d, 3, decodeSize, String(60 * 1024), new Uint8Array(0));
  await d.count(2);
  assert.equal(d.got.length, 1);
  assert.equal(built, 4);
  assert.equal(core.refusedResponses, 2);
  assert.equal(budget.used, 14 * 1024 * 1024 + 60 * 1024);
  core.releaseResponse(c, c.reservedWith[0]);
  core.releaseResponse(d, d.reservedWith[0]);
  // Released by the transport once it lets go of the bodies: room again.
  core.releaseResponse(a, a.reservedWith[0]);
  core.releaseResponse(b, b.reservedWith[0]);
  assert.equal(budget.used, 0);
  assert.equal(a.reservedBytes, 0);
  core.serve(a, 5, decodeSize, String(5 * 1024 * 1024), new Uint8Array(0));
  await a.count(3);
  assert.equal(a.got.length, 2);
  assert.equal(built, 5);
});

Deno.test("server core: answer() gives back a refused response's reservation and counts it", async () => {
  const budget = new ByteBudget(1024);
  const core = new ServerCore((req) => {
    assert.ok(req.reserve!(600));
    if (!req.reserve!(600)) return Promise.resolve(REFUSED);
    return Promise.resolve({ status: 200, headers: {}, body: new Uint8Array(1200) });
  }, { responseBudget: budget });
  const req: SbiRequest = {
    method: "GET",
    path: "/",
    query: new URLSearchParams(),
    headers: {},
    body: new Uint8Array(0),
  };
  const { response, reserved } = await core.answer(req);
  assert.equal(response.refused, true);
  assert.equal(reserved, 0);
  assert.equal(budget.used, 0);
  assert.equal(core.refusedResponses, 1);
});
