import assert from "node:assert/strict";
import { createHandler } from "../handler.ts";
import { buildMultipart } from "../multipart.ts";
import { json, send } from "../_test_util.ts";
import { simulatedResStar } from "./ausf.ts";
import { BoundedMap } from "./ue_registry.ts";

const SUPI = "imsi-001010000000042";
const SUCI = "suci-0-001-01-0000-0-0-0000000042";
const JSON_H = { "content-type": "application/json" };
const enc = new TextEncoder();

function ids() {
  let n = 0;
  return () => `ctx-${++n}`;
}

async function authenticate(h: ReturnType<typeof createHandler>) {
  const start = await send(h, "POST", "/nausf-auth/v1/ue-authentications", {
    headers: JSON_H,
    body: JSON.stringify({
      supiOrSuci: SUCI,
      servingNetworkName: "5G:mnc001.mcc001.3gppnetwork.org",
    }),
  });
  const ctx = json(start) as {
    "5gAuthData": { rand: string };
    _links: Record<string, { href: string }>;
  };
  return { start, ctx };
}

const REGISTRATION = JSON.stringify({
  amfInstanceId: "amf-1",
  deregCallbackUri: "http://amf/cb",
  guami: { plmnId: { mcc: "001", mnc: "01" }, amfId: "cafe00" },
  ratType: "NR",
});

Deno.test("AUSF answers 201 with Location and a 5g-aka link, and confirms only the right RES*", async () => {
  const h = createHandler({ newId: ids() });
  const { start, ctx } = await authenticate(h);
  assert.equal(start.status, 201);
  assert.equal(start.headers.location, "/nausf-auth/v1/ue-authentications/ctx-1");
  assert.equal(
    ctx._links["5g-aka"].href,
    "/nausf-auth/v1/ue-authentications/ctx-1/5g-aka-confirmation",
  );
  const wrong = await send(h, "PUT", ctx._links["5g-aka"].href, {
    headers: JSON_H,
    body: JSON.stringify({ resStar: "00" }),
  });
  assert.equal(json(wrong).authResult, "AUTHENTICATION_FAILURE");
  // The UDM refuses a registration for a UE that failed authentication.
  const reg = await send(h, "PUT", `/nudm-uecm/v1/${SUPI}/registrations/amf-3gpp-access`, {
    headers: JSON_H,
    body: REGISTRATION,
  });
  assert.equal(reg.status, 403);
  assert.equal(json(reg).cause, "REAUTHENTICATION_REQUIRED");
});

Deno.test("UDM SDM refuses a UE before its UECM registration, then serves it", async () => {
  const h = createHandler({ newId: ids() });
  const early = await send(h, "GET", `/nudm-sdm/v2/${SUPI}/am-data`);
  assert.equal(early.status, 404);
  assert.equal(early.headers["content-type"], "application/problem+json");
  assert.equal(json(early).cause, "USER_NOT_FOUND");
  const { ctx } = await authenticate(h);
  await send(h, "PUT", ctx._links["5g-aka"].href, {
    headers: JSON_H,
    body: JSON.stringify({ resStar: simulatedResStar(ctx["5gAuthData"].rand) }),
  });
  const reg = await send(h, "PUT", `/nudm-uecm/v1/${SUPI}/registrations/amf-3gpp-access`, {
    headers: JSON_H,
    body: REGISTRATION,
  });
  assert.equal(reg.status, 201);
  const again = await send(h, "PUT", `/nudm-uecm/v1/${SUPI}/registrations/amf-3gpp-access`, {
    headers: JSON_H,
    body: REGISTRATION,
  });
  assert.equal(again.status, 200);
  const am = await send(h, "GET", `/nudm-sdm/v2/${SUPI}/am-data`);
  assert.equal(am.status, 200);
  assert.deepEqual((json(am).nssai as { defaultSingleNssais: unknown[] }).defaultSingleNssais, [
    { sst: 1, sd: "000001" },
  ]);
  const missing = await send(h, "POST", `/nudm-sdm/v2/${SUPI}/sdm-subscriptions`, {
    headers: JSON_H,
    body: JSON.stringify({ nfInstanceId: "amf-1" }),
  });
  assert.equal(missing.status, 400);
  assert.equal(json(missing).cause, "MANDATORY_IE_MISSING");
  assert.deepEqual(
    (json(missing).invalidParams as { param: string }[]).map((p) => p.param),
    ["/callbackReference", "/monitoredResourceUris"],
  );
  const wrongVersion = await send(h, "GET", `/nudm-sdm/v1/${SUPI}/am-data`);
  assert.equal(wrongVersion.status, 400);
  assert.equal(json(wrongVersion).cause, "INVALID_API");
});

Deno.test("SMF checks the N1 SM part of a multipart SM context create", async () => {
  const h = createHandler({ newId: ids() });
  const create = (parts: { headers: Record<string, string>; body: Uint8Array }[]) =>
    send(h, "POST", "/nsmf-pdusession/v1/sm-contexts", {
      headers: { "content-type": "multipart/related; boundary=b1" },
      body: buildMultipart(parts, "b1"),
    });
  const data = enc.encode(JSON.stringify({
    supi: SUPI,
    pduSessionId: 1,
    dnn: "internet",
    sNssai: { sst: 1 },
    servingNfId: "amf-1",
    servingNetwork: { mcc: "001", mnc: "01" },
    anType: "3GPP_ACCESS",
    smContextStatusUri: "http://amf/cb",
    n1SmMsg: { contentId: "n1" },
  }));
  const jsonPart = { headers: { "Content-Type": "application/json" }, body: data };
  const noPart = await create([jsonPart]);
  assert.equal(noPart.status, 400);
  assert.equal(json(noPart).cause, "MANDATORY_IE_INCORRECT");
  const notNas = await create([jsonPart, {
    headers: { "Content-Type": "application/vnd.3gpp.5gnas", "Content-Id": "n1" },
    body: new Uint8Array([0x7e, 1, 1, 0xc1]),
  }]);
  assert.equal(notNas.status, 403);
  assert.equal(json(notNas).cause, "N1_SM_ERROR");
  const ok = await create([jsonPart, {
    headers: { "Content-Type": "application/vnd.3gpp.5gnas", "Content-Id": "<n1>" },
    body: new Uint8Array([0x2e, 1, 1, 0xc1, 0, 0]),
  }]);
  assert.equal(ok.status, 201);
  assert.equal(ok.headers.location, "/nsmf-pdusession/v1/sm-contexts/ctx-1");
  // The N2 setup response before the AMF took the N1N2 message is out of order.
  const early = await send(h, "POST", "/nsmf-pdusession/v1/sm-contexts/ctx-1/modify", {
    headers: { "content-type": "multipart/related; boundary=b2" },
    body: buildMultipart([
      {
        headers: { "Content-Type": "application/json" },
        body: enc.encode('{"n2SmInfo":{"contentId":"n2"},"n2SmInfoType":"PDU_RES_SETUP_RSP"}'),
      },
      {
        headers: { "Content-Type": "application/vnd.3gpp.ngap", "Content-Id": "n2" },
        body: new Uint8Array(8),
      },
    ], "b2"),
  });
  assert.equal(early.status, 400);
  assert.equal(json(early).cause, "UNSPECIFIED_MSG_FAILURE");
  assert.match(json(early).detail as string, /N1N2 message transfer/);
  const unknown = await send(h, "POST", "/nsmf-pdusession/v1/sm-contexts/nope/modify", {
    headers: JSON_H,
    body: '{"upCnxState":"DEACTIVATED"}',
  });
  assert.equal(unknown.status, 404);
  assert.equal(json(unknown).cause, "CONTEXT_NOT_FOUND");
});

Deno.test("AMF refuses an N1N2 transfer for a UE it does not serve; PCF refuses an unregistered SUPI", async () => {
  const h = createHandler({ newId: ids() });
  const n1n2 = await send(h, "POST", `/namf-comm/v1/ue-contexts/${SUPI}/n1-n2-messages`, {
    headers: JSON_H,
    body: '{"pduSessionId":1}',
  });
  assert.equal(n1n2.status, 404);
  assert.equal(json(n1n2).cause, "CONTEXT_NOT_FOUND");
  const am = await send(h, "POST", "/npcf-am-policy-control/v1/policies", {
    headers: JSON_H,
    body: JSON.stringify({ notificationUri: "http://amf/cb", supi: SUPI, suppFeat: "1" }),
  });
  assert.equal(am.status, 400);
  assert.equal(json(am).cause, "USER_UNKNOWN");
  const badType = await send(h, "POST", "/npcf-am-policy-control/v1/policies", {
    headers: { "content-type": "text/plain" },
    body: "x",
  });
  assert.equal(badType.status, 415);
  const badJson = await send(h, "POST", "/npcf-am-policy-control/v1/policies", {
    headers: JSON_H,
    body: "{",
  });
  assert.equal(badJson.status, 400);
  assert.equal(json(badJson).cause, "INVALID_MSG_FORMAT");
});

Deno.test("the registry forgets its oldest entry past its cap", () => {
  const m = new BoundedMap<string, number>(2);
  m.set("a", 1).set("b", 2).set("a", 3).set("c", 4);
  // Replacing "a" keeps its place, so "a" is still the oldest when "c" comes.
  assert.deepEqual([...m.entries()], [["b", 2], ["c", 4]]);
});
