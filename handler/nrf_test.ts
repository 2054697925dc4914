import assert from "node:assert/strict";
import { createHandler } from "./handler.ts";
import { json, send, text } from "./_test_util.ts";
import type { SbiHandler, SbiResponse } from "./types.ts";

const JSON_CT = { "content-type": "application/json" };
const PATCH_CT = { "content-type": "application/json-patch+json" };
const BASE = "/nnrf-nfm/v1/nf-instances";

/** A UUID that spells `name` (up to 6 bytes) in its last group, so ids sort as their names do. */
function id(name: string): string {
  const hex = [...new TextEncoder().encode(name)].map((b) => b.toString(16).padStart(2, "0"));
  return `00000000-0000-4000-8000-${hex.join("").padEnd(12, "0")}`;
}

function profile(id: string, nfType: string, extra: Record<string, unknown> = {}) {
  return JSON.stringify({ nfInstanceId: id, nfType, nfStatus: "REGISTERED", ...extra });
}

function register(h: SbiHandler, id: string, nfType: string, extra: Record<string, unknown> = {}) {
  return send(h, "PUT", `${BASE}/${id}`, { body: profile(id, nfType, extra), headers: JSON_CT });
}

Deno.test("NRF lifecycle: PUT creates (201 + Location), PUT replaces (200), GET, DELETE, 404", async () => {
  const h = createHandler({ apiRoot: "http://nrf.test:7777" });
  const created = await register(h, id("id-1"), "AMF");
  assert.equal(created.status, 201);
  assert.equal(created.headers.location, `http://nrf.test:7777${BASE}/${id("id-1")}`);
  assert.equal(created.headers["content-type"], "application/json");
  assert.equal(text(created), profile(id("id-1"), "AMF"));

  const replaced = await register(h, id("id-1"), "AMF", { priority: 5 });
  assert.equal(replaced.status, 200);
  assert.equal(replaced.headers.location, undefined);

  const got = await send(h, "GET", `${BASE}/${id("id-1")}`);
  assert.equal(got.status, 200);
  assert.deepEqual(json(got), JSON.parse(profile(id("id-1"), "AMF", { priority: 5 })));

  const deleted = await send(h, "DELETE", `${BASE}/${id("id-1")}`);
  assert.equal(deleted.status, 204);
  assert.equal(deleted.body.length, 0);

  for (const method of ["GET", "DELETE"]) {
    const gone = await send(h, method, `${BASE}/${id("id-1")}`);
    assert.equal(gone.status, 404, method);
    assert.equal(gone.headers["content-type"], "application/problem+json");
    assert.equal(json(gone).instance, `${BASE}/${id("id-1")}`);
  }
});

Deno.test("NRF PUT without mandatory IEs is 400 MANDATORY_IE_MISSING naming each one", async () => {
  const h = createHandler();
  const res = await send(h, "PUT", `${BASE}/${id("x")}`, {
    body: JSON.stringify({ nfInstanceId: id("x") }),
    headers: JSON_CT,
  });
  assert.equal(res.status, 400);
  const body = json(res);
  assert.equal(body.cause, "MANDATORY_IE_MISSING");
  assert.deepEqual((body.invalidParams as { param: string }[]).map((p) => p.param), [
    "/nfType",
    "/nfStatus",
  ]);
  assert.equal((await send(h, "GET", `${BASE}/${id("x")}`)).status, 404);
});

Deno.test("NRF PUT with an nfInstanceId other than the path is 400 MANDATORY_IE_INCORRECT", async () => {
  const h = createHandler();
  const res = await send(h, "PUT", `${BASE}/${id("a")}`, {
    body: profile(id("b"), "AMF"),
    headers: JSON_CT,
  });
  assert.equal(res.status, 400);
  assert.equal(json(res).cause, "MANDATORY_IE_INCORRECT");
  assert.deepEqual(json(res).invalidParams, [
    { param: "/nfInstanceId", reason: "must equal the {nfInstanceId} path segment" },
  ]);
});

Deno.test("NRF PUT rejects malformed JSON, non-objects and wrong content-types", async () => {
  const h = createHandler();
  const bad = await send(h, "PUT", `${BASE}/${id("a")}`, { body: '{"nfType":', headers: JSON_CT });
  assert.equal(bad.status, 400);
  assert.equal(json(bad).cause, "INVALID_MSG_FORMAT");

  const invalidUtf8 = await send(h, "PUT", `${BASE}/${id("a")}`, {
    body: new Uint8Array([0x22, 0xff, 0x22]),
    headers: JSON_CT,
  });
  assert.equal(json(invalidUtf8).cause, "INVALID_MSG_FORMAT");

  const array = await send(h, "PUT", `${BASE}/${id("a")}`, { body: "[]", headers: JSON_CT });
  assert.equal(array.status, 400);
  assert.equal(json(array).cause, "INVALID_MSG_FORMAT");

  for (const headers of [{}, { "content-type": "text/plain" }] as Record<string, string>[]) {
    const res = await send(h, "PUT", `${BASE}/${id("a")}`, {
      body: profile(id("a"), "AMF"),
      headers,
    });
    assert.equal(res.status, 415);
    assert.equal(json(res).cause, "UNSUPPORTED_MEDIA_TYPE");
  }
  const withCharset = await send(h, "PUT", `${BASE}/${id("a")}`, {
    body: profile(id("a"), "AMF"),
    headers: { "content-type": "Application/JSON; charset=utf-8" },
  });
  assert.equal(withCharset.status, 201);
});

Deno.test("NRF PATCH applies a JSON Patch and returns the new profile", async () => {
  const h = createHandler();
  await register(h, id("p"), "SMF", { nfServices: [] });
  const res = await send(h, "PATCH", `${BASE}/${id("p")}`, {
    headers: PATCH_CT,
    body: JSON.stringify([
      { op: "test", path: "/nfStatus", value: "REGISTERED" },
      { op: "replace", path: "/nfStatus", value: "SUSPENDED" },
      { op: "add", path: "/nfServices/-", value: { serviceName: "nsmf-pdusession" } },
      { op: "add", path: "/load", value: 40 },
    ]),
  });
  assert.equal(res.status, 200);
  const expected = {
    nfInstanceId: id("p"),
    nfType: "SMF",
    nfStatus: "SUSPENDED",
    nfServices: [{ serviceName: "nsmf-pdusession" }],
    load: 40,
  };
  assert.deepEqual(json(res), expected);
  assert.deepEqual(json(await send(h, "GET", `${BASE}/${id("p")}`)), expected);
});

Deno.test("NRF PATCH errors: media type, malformed patch, conflict, id change, removed IE, unknown id", async () => {
  const h = createHandler();
  await register(h, id("p"), "SMF");
  const patch = (body: string, headers: Record<string, string> = PATCH_CT, target = id("p")) =>
    send(h, "PATCH", `${BASE}/${target}`, { body, headers });

  const wrongType = await patch("[]", JSON_CT);
  assert.equal(wrongType.status, 415);

  const notJson = await patch("[{");
  assert.deepEqual([notJson.status, json(notJson).cause], [400, "INVALID_MSG_FORMAT"]);

  const malformed = await patch('[{"op":"jump","path":"/a"}]');
  assert.deepEqual([malformed.status, json(malformed).cause], [400, "INVALID_MSG_FORMAT"]);

  const conflict = await patch(
    '[{"op":"add","path":"/x","value":1},{"op":"test","path":"/nfType","value":"AMF"}]',
  );
  assert.equal(conflict.status, 409);
  const params = json(conflict).invalidParams as { param: string; reason: string }[];
  assert.equal(params[0].param, "/nfType");
  assert.match(params[0].reason, /index= 1/);

  const idChange = await patch('[{"op":"replace","path":"/nfInstanceId","value":"q"}]');
  assert.deepEqual([idChange.status, json(idChange).cause], [403, "MODIFICATION_NOT_ALLOWED"]);

  const removed = await patch('[{"op":"remove","path":"/nfType"}]');
  assert.deepEqual([removed.status, json(removed).cause], [400, "MANDATORY_IE_MISSING"]);

  const unknown = await patch("[]", PATCH_CT, id("nobody"));
  assert.equal(unknown.status, 404);

  // None of the failed patches changed the stored profile.
  assert.equal(text(await send(h, "GET", `${BASE}/${id("p")}`)), profile(id("p"), "SMF"));
});

Deno.test("NRF list returns a UriList of instance links, filterable by nf-type and limit", async () => {
  const h = createHandler();
  await register(h, id("c"), "AMF");
  await register(h, id("a"), "SMF");
  await register(h, id("b"), "AMF");
  const all = await send(h, "GET", BASE);
  assert.equal(all.status, 200);
  assert.equal(all.headers["content-type"], "application/3gppHal+json");
  assert.equal(
    text(all),
    `{"_links":{"self":{"href":"${BASE}"},"items":[{"href":"${BASE}/${id("a")}"},` +
      `{"href":"${BASE}/${id("b")}"},{"href":"${BASE}/${id("c")}"}]},"totalItemCount":3}`,
  );
  const amf = json(await send(h, "GET", `${BASE}?nf-type=AMF&limit=1`));
  assert.deepEqual(amf._links, {
    self: { href: `${BASE}?nf-type=AMF&limit=1` },
    items: [{ href: `${BASE}/${id("b")}` }],
  });
  assert.equal(amf.totalItemCount, 2);
  const badLimit = await send(h, "GET", `${BASE}?limit=0`);
  assert.deepEqual([badLimit.status, json(badLimit).cause], [
    400,
    "OPTIONAL_QUERY_PARAM_INCORRECT",
  ]);
});

Deno.test("discovery filters by target type, status and allowedNfTypes", async () => {
  const h = createHandler({ validitySeconds: 120 });
  await register(h, id("amf-2"), "AMF");
  await register(h, id("amf-1"), "AMF");
  await register(h, id("smf-1"), "SMF");
  await register(h, id("amf-3"), "AMF", { nfStatus: "SUSPENDED" });
  await register(h, id("amf-4"), "AMF", { allowedNfTypes: ["NSSF"] });
  await register(h, id("amf-5"), "AMF", { allowedNfTypes: ["SMF", "NSSF"] });

  const res = await send(
    h,
    "GET",
    "/nnrf-disc/v1/nf-instances?target-nf-type=AMF&requester-nf-type=SMF",
  );
  assert.equal(res.status, 200);
  assert.equal(res.headers["content-type"], "application/json");
  const body = json(res);
  assert.equal(body.validityPeriod, 120);
  const ids = (body.nfInstances as { nfInstanceId: string }[]).map((p) => p.nfInstanceId);
  assert.deepEqual(ids, ["amf-1", "amf-2", "amf-5"].map(id));

  const limited = json(
    await send(
      h,
      "GET",
      "/nnrf-disc/v1/nf-instances?target-nf-type=AMF&requester-nf-type=SMF&limit=2",
    ),
  );
  assert.equal((limited.nfInstances as unknown[]).length, 2);

  const none = json(
    await send(h, "GET", "/nnrf-disc/v1/nf-instances?target-nf-type=UDM&requester-nf-type=SMF"),
  );
  assert.deepEqual(none, { validityPeriod: 120, nfInstances: [] });
});

Deno.test("discovery without its mandatory query parameters names each missing one", async () => {
  const h = createHandler();
  const both = await send(h, "GET", "/nnrf-disc/v1/nf-instances");
  assert.equal(both.status, 400);
  assert.equal(json(both).cause, "MANDATORY_QUERY_PARAM_MISSING");
  assert.deepEqual(
    (json(both).invalidParams as { param: string }[]).map((p) => p.param),
    ["query target-nf-type", "query requester-nf-type"],
  );
  const one = await send(h, "GET", "/nnrf-disc/v1/nf-instances?target-nf-type=AMF");
  assert.deepEqual(
    (json(one).invalidParams as { param: string }[]).map((p) => p.param),
    ["query requester-nf-type"],
  );
});

Deno.test("NRF instance ids (relaxed to any string) are percent-decoded from the path and encoded in links", async () => {
  const h = createHandler({ nrf: { anyInstanceId: true } });
  const res = await send(h, "PUT", `${BASE}/a%20b`, {
    body: profile("a b", "AMF"),
    headers: JSON_CT,
  });
  assert.equal(res.status, 201);
  assert.equal(res.headers.location, `${BASE}/a%20b`);
  const bad = await send(h, "GET", `${BASE}/%E0%A4%A`);
  assert.equal(bad.status, 400);
  assert.deepEqual(json(bad).invalidParams, [
    { param: "{nfInstanceId}", reason: "invalid percent-encoding" },
  ]);
});

Deno.test("NRF PUT with an nfInstanceId that is not a UUID is 400 unless the lab option relaxes it", async () => {
  const body = profile("amf-one", "AMF");
  const strict = await send(createHandler(), "PUT", `${BASE}/amf-one`, { body, headers: JSON_CT });
  assert.equal(strict.status, 400);
  assert.equal(json(strict).cause, "MANDATORY_IE_INCORRECT");
  assert.deepEqual(json(strict).invalidParams, [{
    param: "{nfInstanceId}",
    reason: "must be a UUID",
  }]);
  const relaxed = createHandler({ nrf: { anyInstanceId: true } });
  assert.equal(
    (await send(relaxed, "PUT", `${BASE}/amf-one`, { body, headers: JSON_CT })).status,
    201,
  );
  const upper = id("UP").toUpperCase();
  assert.equal((await register(createHandler(), upper, "AMF")).status, 201);
});

Deno.test("NRF refuses an instance beyond its maximum with 403 INSUFFICIENT_RESOURCES, replacing still works", async () => {
  const h = createHandler({ nrf: { maxInstances: 3 } });
  for (const n of ["n1", "n2", "n3"]) assert.equal((await register(h, id(n), "AMF")).status, 201);
  const full = await register(h, id("n4"), "AMF");
  assert.equal(full.status, 403);
  assert.equal(full.headers["content-type"], "application/problem+json");
  assert.equal(json(full).cause, "INSUFFICIENT_RESOURCES");
  assert.equal((await send(h, "GET", `${BASE}/${id("n4")}`)).status, 404);
  assert.equal((await register(h, id("n2"), "SMF")).status, 200, "replacing is not a new instance");
  assert.equal((await send(h, "DELETE", `${BASE}/${id("n1")}`)).status, 204);
  assert.equal((await register(h, id("n4"), "AMF")).status, 201, "a freed slot can be reused");
});

Deno.test("NRF refuses a profile larger than its maximum with 413, as sent or after a PATCH", async () => {
  const h = createHandler({ nrf: { maxProfileBytes: 1024 } });
  const big = await register(h, id("big"), "AMF", { pad: "x".repeat(2000) });
  assert.equal(big.status, 413);
  assert.equal(json(big).cause, "PAYLOAD_TOO_LARGE");
  assert.equal((await send(h, "GET", `${BASE}/${id("big")}`)).status, 404);
  assert.equal((await register(h, id("small"), "AMF")).status, 201);
  const grow = await send(h, "PATCH", `${BASE}/${id("small")}`, {
    headers: PATCH_CT,
    body: JSON.stringify([{ op: "add", path: "/pad", value: "x".repeat(2000) }]),
  });
  assert.equal(grow.status, 413);
  assert.equal(json(grow).cause, "PAYLOAD_TOO_LARGE");
  assert.equal(text(await send(h, "GET", `${BASE}/${id("small")}`)), profile(id("small"), "AMF"));
});

Deno.test("NRF answers a body nested 5,000 deep with 400 INVALID_MSG_FORMAT, not a stack overflow", async () => {
  const errors: unknown[] = [];
  const h = createHandler({ onError: (err) => errors.push(err) });
  const deep = "[".repeat(5000) + "]".repeat(5000);
  const put = await send(h, "PUT", `${BASE}/${id("deep")}`, {
    body: `{"nfInstanceId":"${id("deep")}","nfType":"AMF","nfStatus":"REGISTERED","x":${deep}}`,
    headers: JSON_CT,
  });
  assert.deepEqual([put.status, json(put).cause], [400, "INVALID_MSG_FORMAT"]);
  assert.match(json(put).detail as string, /deeper than 32/);
  await register(h, id("p"), "SMF");
  const patch = (body: string) =>
    send(h, "PATCH", `${BASE}/${id("p")}`, { body, headers: PATCH_CT });
  const deepValue = await patch(`[{"op":"add","path":"/x","value":${deep}}]`);
  assert.deepEqual([deepValue.status, json(deepValue).cause], [400, "INVALID_MSG_FORMAT"]);
  // Each patch is shallow, but together they would build a profile deeper than the limit.
  const nest = (levels: number) => "[".repeat(levels) + "]".repeat(levels);
  assert.equal((await patch(`[{"op":"add","path":"/x","value":${nest(28)}}]`)).status, 200);
  const deeper = await patch(`[{"op":"add","path":"/x${"/0".repeat(27)}/0","value":${nest(10)}}]`);
  assert.deepEqual([deeper.status, json(deeper).cause], [400, "INVALID_MSG_FORMAT"]);
  assert.match(json(deeper).detail as string, /patched NFProfile/);
  assert.deepEqual(errors, []);
});

Deno.test("discovery answers within max-payload-size (124 kilo-octets by default, at most 2000): profiles dropped whole, numNfInstComplete says how many were found", async () => {
  const h = createHandler({ nrf: { anyInstanceId: true } });
  // 40 profiles of about 10 kB: 400 kB in all.
  const pad = "x".repeat(10_000);
  for (let i = 0; i < 40; i++) {
    const name = `amf-${String(i).padStart(2, "0")}`;
    const res = await register(h, name, "AMF", { pad });
    assert.equal(res.status, 201);
  }
  const ask = (extra: string) =>
    send(h, "GET", `/nnrf-disc/v1/nf-instances?target-nf-type=AMF&requester-nf-type=SMF${extra}`);
  const profileBytes = profile("amf-00", "AMF", { pad }).length;

  const byDefault = await ask("");
  assert.equal(byDefault.status, 200);
  assert.ok(byDefault.body.length <= 124_000, `${byDefault.body.length} bytes`);
  const d = json(byDefault);
  const kept = (d.nfInstances as { nfInstanceId: string }[]).map((p) => p.nfInstanceId);
  // As many whole profiles as fit, in order, none cut.
  assert.equal(kept.length, Math.floor((124_000 - 100) / (profileBytes + 1)));
  assert.deepEqual(kept, kept.map((_, i) => `amf-${String(i).padStart(2, "0")}`));
  assert.equal(d.numNfInstComplete, 40);

  const explicit = await ask("&max-payload-size=30");
  assert.ok(explicit.body.length <= 30_000, `${explicit.body.length} bytes`);
  assert.equal((json(explicit).nfInstances as unknown[]).length, 2);
  assert.equal(json(explicit).numNfInstComplete, 40);

  const all = await ask("&max-payload-size=2000");
  assert.equal((json(all).nfInstances as unknown[]).length, 40);
  assert.equal(json(all).numNfInstComplete, undefined, "a complete answer does not carry it");

  const limited = json(await ask("&max-payload-size=2000&limit=3"));
  assert.equal((limited.nfInstances as unknown[]).length, 3);
  assert.equal(limited.numNfInstComplete, 40);

  for (const bad of ["2001", "0", "-1", "big"]) {
    const res = await ask(`&max-payload-size=${bad}`);
    assert.equal(res.status, 400, bad);
    assert.equal(json(res).cause, "OPTIONAL_QUERY_PARAM_INCORRECT", bad);
    assert.deepEqual(
      (json(res).invalidParams as { param: string }[]).map((p) => p.param),
      ["query max-payload-size"],
    );
  }
});

Deno.test("a repeated discovery reuses its answer's bytes until the profiles or the query change", async () => {
  const h = createHandler({ nrf: { anyInstanceId: true } });
  await register(h, "amf-1", "AMF");
  await register(h, "amf-2", "AMF");
  const ask = (extra = "") =>
    send(h, "GET", `/nnrf-disc/v1/nf-instances?target-nf-type=AMF&requester-nf-type=SMF${extra}`);
  const ids = (r: SbiResponse) =>
    (json(r).nfInstances as { nfInstanceId: string; v?: number }[]).map((p) =>
      `${p.nfInstanceId}${p.v ?? ""}`
    );
  const first = await ask();
  assert.equal(
    (await ask()).body,
    first.body,
    "the same query over the same profiles: the same bytes",
  );
  const limited = await ask("&limit=1");
  assert.notEqual(limited.body, first.body);
  assert.deepEqual(ids(limited), ["amf-1"]);
  // A replaced profile, an added one and a removed one each change the answer at once.
  await register(h, "amf-1", "AMF", { v: 2 });
  assert.deepEqual(ids(await ask()), ["amf-12", "amf-2"]);
  await register(h, "amf-3", "AMF");
  assert.deepEqual(ids(await ask()), ["amf-12", "amf-2", "amf-3"]);
  assert.equal((await send(h, "DELETE", `${BASE}/amf-2`)).status, 204);
  assert.deepEqual(ids(await ask()), ["amf-12", "amf-3"]);
  assert.deepEqual(ids(await ask("&limit=1")), ["amf-12"]);
});

Deno.test("discovery reserves its answer's bound before building it, and is refused without room", async () => {
  const h = createHandler();
  await register(h, id("amf-1"), "AMF");
  const asked: number[] = [];
  const ask = (room: boolean, extra = "") =>
    h({
      method: "GET",
      path: "/nnrf-disc/v1/nf-instances",
      query: new URLSearchParams(`target-nf-type=AMF&requester-nf-type=SMF${extra}`),
      headers: {},
      body: new Uint8Array(0),
      reserve: (bytes) => (asked.push(bytes), room),
    });
  assert.equal((await ask(true)).status, 200);
  assert.equal((await ask(true, "&max-payload-size=500")).status, 200);
  const refused = await ask(false);
  assert.equal(refused.refused, true);
  assert.deepEqual(asked, [124_000, 500_000, 124_000]);
});
