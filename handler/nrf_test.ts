import assert from "node:assert/strict";
import { createHandler } from "./handler.ts";
import { json, send, text } from "./_test_util.ts";
import type { SbiHandler } from "./types.ts";

const JSON_CT = { "content-type": "application/json" };
const PATCH_CT = { "content-type": "application/json-patch+json" };
const BASE = "/nnrf-nfm/v1/nf-instances";

function profile(id: string, nfType: string, extra: Record<string, unknown> = {}) {
  return JSON.stringify({ nfInstanceId: id, nfType, nfStatus: "REGISTERED", ...extra });
}

function register(h: SbiHandler, id: string, nfType: string, extra: Record<string, unknown> = {}) {
  return send(h, "PUT", `${BASE}/${id}`, { body: profile(id, nfType, extra), headers: JSON_CT });
}

Deno.test("NRF lifecycle: PUT creates (201 + Location), PUT replaces (200), GET, DELETE, 404", async () => {
  const h = createHandler({ apiRoot: "http://nrf.test:7777" });
  const created = await register(h, "id-1", "AMF");
  assert.equal(created.status, 201);
  assert.equal(created.headers.location, `http://nrf.test:7777${BASE}/id-1`);
  assert.equal(created.headers["content-type"], "application/json");
  assert.equal(text(created), profile("id-1", "AMF"));

  const replaced = await register(h, "id-1", "AMF", { priority: 5 });
  assert.equal(replaced.status, 200);
  assert.equal(replaced.headers.location, undefined);

  const got = await send(h, "GET", `${BASE}/id-1`);
  assert.equal(got.status, 200);
  assert.deepEqual(json(got), JSON.parse(profile("id-1", "AMF", { priority: 5 })));

  const deleted = await send(h, "DELETE", `${BASE}/id-1`);
  assert.equal(deleted.status, 204);
  assert.equal(deleted.body.length, 0);

  for (const method of ["GET", "DELETE"]) {
    const gone = await send(h, method, `${BASE}/id-1`);
    assert.equal(gone.status, 404, method);
    assert.equal(gone.headers["content-type"], "application/problem+json");
    assert.equal(json(gone).instance, `${BASE}/id-1`);
  }
});

Deno.test("NRF PUT without mandatory IEs is 400 MANDATORY_IE_MISSING naming each one", async () => {
  const h = createHandler();
  const res = await send(h, "PUT", `${BASE}/x`, {
    body: JSON.stringify({ nfInstanceId: "x" }),
    headers: JSON_CT,
  });
  assert.equal(res.status, 400);
  const body = json(res);
  assert.equal(body.cause, "MANDATORY_IE_MISSING");
  assert.deepEqual((body.invalidParams as { param: string }[]).map((p) => p.param), [
    "/nfType",
    "/nfStatus",
  ]);
  assert.equal((await send(h, "GET", `${BASE}/x`)).status, 404);
});

Deno.test("NRF PUT with an nfInstanceId other than the path is 400 MANDATORY_IE_INCORRECT", async () => {
  const h = createHandler();
  const res = await send(h, "PUT", `${BASE}/a`, { body: profile("b", "AMF"), headers: JSON_CT });
  assert.equal(res.status, 400);
  assert.equal(json(res).cause, "MANDATORY_IE_INCORRECT");
  assert.deepEqual(json(res).invalidParams, [
    { param: "/nfInstanceId", reason: "must equal the {nfInstanceId} path segment" },
  ]);
});

Deno.test("NRF PUT rejects malformed JSON, non-objects and wrong content-types", async () => {
  const h = createHandler();
  const bad = await send(h, "PUT", `${BASE}/a`, { body: '{"nfType":', headers: JSON_CT });
  assert.equal(bad.status, 400);
  assert.equal(json(bad).cause, "INVALID_MSG_FORMAT");

  const invalidUtf8 = await send(h, "PUT", `${BASE}/a`, {
    body: new Uint8Array([0x22, 0xff, 0x22]),
    headers: JSON_CT,
  });
  assert.equal(json(invalidUtf8).cause, "INVALID_MSG_FORMAT");

  const array = await send(h, "PUT", `${BASE}/a`, { body: "[]", headers: JSON_CT });
  assert.equal(array.status, 400);
  assert.equal(json(array).cause, "INVALID_MSG_FORMAT");

  for (const headers of [{}, { "content-type": "text/plain" }] as Record<string, string>[]) {
    const res = await send(h, "PUT", `${BASE}/a`, { body: profile("a", "AMF"), headers });
    assert.equal(res.status, 415);
    assert.equal(json(res).cause, "UNSUPPORTED_MEDIA_TYPE");
  }
  const withCharset = await send(h, "PUT", `${BASE}/a`, {
    body: profile("a", "AMF"),
    headers: { "content-type": "Application/JSON; charset=utf-8" },
  });
  assert.equal(withCharset.status, 201);
});

Deno.test("NRF PATCH applies a JSON Patch and returns the new profile", async () => {
  const h = createHandler();
  await register(h, "p", "SMF", { nfServices: [] });
  const res = await send(h, "PATCH", `${BASE}/p`, {
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
    nfInstanceId: "p",
    nfType: "SMF",
    nfStatus: "SUSPENDED",
    nfServices: [{ serviceName: "nsmf-pdusession" }],
    load: 40,
  };
  assert.deepEqual(json(res), expected);
  assert.deepEqual(json(await send(h, "GET", `${BASE}/p`)), expected);
});

Deno.test("NRF PATCH errors: media type, malformed patch, conflict, id change, removed IE, unknown id", async () => {
  const h = createHandler();
  await register(h, "p", "SMF");
  const patch = (body: string, headers: Record<string, string> = PATCH_CT, id = "p") =>
    send(h, "PATCH", `${BASE}/${id}`, { body, headers });

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

  const unknown = await patch("[]", PATCH_CT, "nobody");
  assert.equal(unknown.status, 404);

  // None of the failed patches changed the stored profile.
  assert.equal(text(await send(h, "GET", `${BASE}/p`)), profile("p", "SMF"));
});

Deno.test("NRF list returns a UriList of instance links, filterable by nf-type and limit", async () => {
  const h = createHandler();
  await register(h, "c", "AMF");
  await register(h, "a", "SMF");
  await register(h, "b", "AMF");
  const all = await send(h, "GET", BASE);
  assert.equal(all.status, 200);
  assert.equal(all.headers["content-type"], "application/3gppHal+json");
  assert.equal(
    text(all),
    `{"_links":{"self":{"href":"${BASE}"},"items":[{"href":"${BASE}/a"},` +
      `{"href":"${BASE}/b"},{"href":"${BASE}/c"}]},"totalItemCount":3}`,
  );
  const amf = json(await send(h, "GET", `${BASE}?nf-type=AMF&limit=1`));
  assert.deepEqual(amf._links, {
    self: { href: `${BASE}?nf-type=AMF&limit=1` },
    items: [{ href: `${BASE}/b` }],
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
  await register(h, "amf-2", "AMF");
  await register(h, "amf-1", "AMF");
  await register(h, "smf-1", "SMF");
  await register(h, "amf-3", "AMF", { nfStatus: "SUSPENDED" });
  await register(h, "amf-4", "AMF", { allowedNfTypes: ["NSSF"] });
  await register(h, "amf-5", "AMF", { allowedNfTypes: ["SMF", "NSSF"] });

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
  assert.deepEqual(ids, ["amf-1", "amf-2", "amf-5"]);

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

Deno.test("NRF instance ids are percent-decoded from the path and encoded in links", async () => {
  const h = createHandler();
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
