/**
 * The parity table: every case runs against the handler called directly and
 * against every transport; status, content-type, Location, Allow and body
 * bytes must be identical. Each target gets its own fresh handler so NRF
 * state evolves the same way everywhere.
 */
import assert from "node:assert/strict";
import { createHandler, systemFailure } from "../handler/mod.ts";
import type { SbiHandler, SbiResponse } from "../handler/types.ts";
import { directCall, startPair, testTargets } from "./support.ts";

const enc = new TextEncoder();

/** Deterministic bytes (not all ASCII) so echo covers binary bodies. */
function bytes(n: number, seed = 7): Uint8Array {
  const b = new Uint8Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

interface Case {
  name: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: Uint8Array;
}

const ID = "6f0c2f3e-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
const profile = (status: string) =>
  enc.encode(JSON.stringify({ nfInstanceId: ID, nfType: "SMF", nfStatus: status, priority: 1 }));

const CASES: Case[] = [
  ...[1, 256, 16384, 1 << 20].map((n) => ({
    name: `GET payload ${n} B`,
    method: "GET",
    path: `/nbench/v1/payload?size=${n}`,
  })),
  ...[0, 1, 256, 16384, 1 << 20].map((n) => ({
    name: `POST echo ${n} B`,
    method: "POST",
    path: "/nbench/v1/echo",
    headers: { "content-type": "application/octet-stream" },
    body: bytes(n),
  })),
  {
    name: "POST echo keeps JSON content-type and priority",
    method: "POST",
    path: "/nbench/v1/echo",
    headers: { "content-type": "application/json", "3gpp-sbi-message-priority": "5" },
    body: enc.encode('{"x":[1,2,3]}'),
  },
  {
    name: "PUT creates an NF profile",
    method: "PUT",
    path: `/nnrf-nfm/v1/nf-instances/${ID}`,
    headers: { "content-type": "application/json" },
    body: profile("REGISTERED"),
  },
  {
    name: "PUT replaces the NF profile",
    method: "PUT",
    path: `/nnrf-nfm/v1/nf-instances/${ID}`,
    headers: { "content-type": "application/json" },
    body: profile("REGISTERED"),
  },
  { name: "GET reads the NF profile", method: "GET", path: `/nnrf-nfm/v1/nf-instances/${ID}` },
  {
    name: "PATCH updates the NF profile",
    method: "PATCH",
    path: `/nnrf-nfm/v1/nf-instances/${ID}`,
    headers: { "content-type": "application/json-patch+json" },
    body: enc.encode('[{"op":"replace","path":"/nfStatus","value":"SUSPENDED"}]'),
  },
  { name: "GET lists NF instances", method: "GET", path: "/nnrf-nfm/v1/nf-instances" },
  {
    name: "GET discovers SMF instances",
    method: "GET",
    path: "/nnrf-disc/v1/nf-instances?target-nf-type=SMF&requester-nf-type=AMF",
  },
  { name: "DELETE deregisters the NF", method: "DELETE", path: `/nnrf-nfm/v1/nf-instances/${ID}` },
  { name: "GET after DELETE is 404", method: "GET", path: `/nnrf-nfm/v1/nf-instances/${ID}` },
  { name: "unknown resource is 404", method: "GET", path: "/nfoo/v1/bar" },
  { name: "wrong method is 405 with Allow", method: "DELETE", path: "/nbench/v1/echo" },
  {
    name: "malformed JSON is 400",
    method: "PUT",
    path: `/nnrf-nfm/v1/nf-instances/${ID}`,
    headers: { "content-type": "application/json" },
    body: enc.encode("{not json"),
  },
  {
    name: "missing mandatory field is 400",
    method: "PUT",
    path: `/nnrf-nfm/v1/nf-instances/${ID}`,
    headers: { "content-type": "application/json" },
    body: enc.encode(`{"nfInstanceId":"${ID}"}`),
  },
  {
    name: "missing query parameter is 400",
    method: "GET",
    path: "/nnrf-disc/v1/nf-instances?target-nf-type=SMF",
  },
  { name: "bad payload size is 400", method: "GET", path: "/nbench/v1/payload?size=0" },
  {
    name: "unsupported content-type is 415",
    method: "PUT",
    path: `/nnrf-nfm/v1/nf-instances/${ID}`,
    headers: { "content-type": "text/plain" },
    body: enc.encode("hello"),
  },
  {
    name: "body over the limit is 413",
    method: "POST",
    path: "/nbench/v1/echo",
    headers: { "content-type": "application/octet-stream" },
    body: bytes((1 << 20) + 1),
  },
  { name: "a crashing route is 500 without a stack", method: "GET", path: "/test/crash" },
];

/** A fresh handler with a 1 MiB limit and one route that throws. */
function freshHandler(): SbiHandler {
  const inner = createHandler({ maxBodyBytes: 1 << 20, onError: () => {} });
  return (req) =>
    req.path === "/test/crash" ? Promise.reject(new Error("planted failure")) : inner(req);
}

interface Seen {
  status: number;
  contentType?: string;
  location?: string;
  allow?: string;
  priority?: string;
  body: Uint8Array;
}

function pick(r: { status: number; headers: Record<string, string>; body: Uint8Array }): Seen {
  return {
    status: r.status,
    contentType: r.headers["content-type"],
    location: r.headers["location"],
    allow: r.headers["allow"],
    priority: r.headers["3gpp-sbi-message-priority"],
    body: r.body,
  };
}

/** What the direct call gives, with the crash mapped the way every transport maps it. */
async function expected(handler: SbiHandler, c: Case): Promise<Seen> {
  let r: SbiResponse;
  try {
    r = await directCall(handler, c.method, c.path, c.headers, c.body);
  } catch {
    r = systemFailure();
  }
  return pick(r);
}

for (const { transport, stack } of await testTargets()) {
  const label = `${transport} on the ${stack} stack`;
  Deno.test(`${label} returns the handler's exact bytes for every parity case`, async () => {
    const direct = freshHandler();
    const pair = await startPair(transport, { handler: freshHandler(), timeoutMs: 20_000, stack });
    try {
      for (const c of CASES) {
        const want = await expected(direct, c);
        const got = pick(
          await pair.client.request({
            method: c.method,
            path: c.path,
            headers: c.headers,
            body: c.body,
          }),
        );
        assert.equal(got.status, want.status, `${c.name}: status`);
        assert.equal(got.contentType, want.contentType, `${c.name}: content-type`);
        assert.equal(got.location, want.location, `${c.name}: location`);
        assert.equal(got.allow, want.allow, `${c.name}: allow`);
        assert.equal(got.priority, want.priority, `${c.name}: priority`);
        assert.equal(got.body.length, want.body.length, `${c.name}: body length`);
        assert.deepEqual(got.body, want.body, `${c.name}: body bytes`);
      }
    } finally {
      await pair.close();
    }
  });
}

Deno.test("the parity table really discriminates: statuses and sizes differ across cases", async () => {
  const h = freshHandler();
  const seen = [];
  for (const c of CASES) seen.push(await expected(h, c));
  const statuses = new Set(seen.map((s) => s.status));
  for (const s of [200, 201, 204, 400, 404, 405, 413, 415, 500]) {
    assert.ok(statuses.has(s), `no case gives ${s}`);
  }
  assert.equal(seen[3].body.length, 1 << 20);
  assert.equal(seen.find((s) => s.status === 201)?.location?.endsWith(ID), true);
  assert.ok(seen.find((s) => s.status === 405)?.allow?.includes("POST"));
});
