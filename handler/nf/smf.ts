/**
 * A mock SMF (TS 29.502 `Nsmf_PDUSession`, the SM context service the AMF
 * calls): SM context create with the N1 SM message as a binary part, and
 * SM context updates for the N2 setup response, AN release, service request
 * and N2 handover (preparation, resource allocation, completion). Each update
 * checks the context's state, so a step out of order gets a ProblemDetails.
 */
import { ProblemError } from "../problem.ts";
import {
  contextNotFound,
  integerIe,
  jsonResponse,
  jsonWithParts,
  multipartResponse,
  NAS_TYPE,
  type NfContext,
  type NfRoute,
  NGAP_TYPE,
  referencedPart,
  stringIe,
} from "./_shared.ts";
import type { SbiRequest, SbiResponse } from "../types.ts";
import type { SmContext } from "./ue_registry.ts";

/** Base path of the API. */
export const SMF_API = "/nsmf-pdusession/v1";

/** 5GSM extended protocol discriminator (TS 24.007 §11.2.3.1.1). */
export const EPD_5GSM = 0x2e;
/** 5GSM message types used here (TS 24.501 §9.7). */
export const MSG_PDU_SESSION_ESTABLISHMENT_REQUEST = 0xc1;
export const MSG_PDU_SESSION_ESTABLISHMENT_ACCEPT = 0xc2;

/**
 * A deterministic N2 SM information IE of `length` bytes standing in for an
 * NGAP transfer (TS 38.413, APER-encoded in a real network).
 */
export function n2SmBytes(kind: string, pduSessionId: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  out[0] = 0x00;
  out[1] = pduSessionId & 0xff;
  for (let i = 2; i < length; i++) out[i] = (kind.charCodeAt(i % kind.length) + i) & 0x7f;
  return out;
}

/** A 200 SmContextUpdatedData with `fields` and one N2 SM information part of `length` bytes. */
function n2Answer(
  sm: SmContext,
  fields: Record<string, unknown>,
  n2SmInfoType: string,
  length: number,
) {
  return multipartResponse(200, {
    ...fields,
    n2SmInfo: { contentId: "n2-sm-info" },
    n2SmInfoType,
  }, [{
    contentId: "n2-sm-info",
    contentType: NGAP_TYPE,
    body: n2SmBytes(n2SmInfoType, sm.pduSessionId, length),
  }]);
}

function outOfOrder(detail: string): ProblemError {
  return new ProblemError(400, { cause: "UNSPECIFIED_MSG_FAILURE", detail });
}

/** An SmContextUpdateData with its parts. */
type SmUpdate = ReturnType<typeof jsonWithParts>;

/** TS 29.502 §5.2.2.2.1: POST SmContextCreateData (+ N1 SM) → 201 SmContextCreatedData. */
function createSmContext(ctx: NfContext, request: SbiRequest, base: string): SbiResponse {
  const body = jsonWithParts(request, "SmContextCreateData", [
    "supi",
    "pduSessionId",
    "dnn",
    "sNssai",
    "servingNfId",
    "servingNetwork",
    "anType",
    "smContextStatusUri",
    "n1SmMsg",
  ]);
  const supi = stringIe(body.json, "supi");
  const pduSessionId = integerIe(body.json, "pduSessionId", 1, 15);
  const n1 = referencedPart(body, body.json.n1SmMsg, "/n1SmMsg", NAS_TYPE).body;
  if (
    n1.length < 4 || n1[0] !== EPD_5GSM || n1[3] !== MSG_PDU_SESSION_ESTABLISHMENT_REQUEST
  ) {
    throw new ProblemError(403, {
      cause: "N1_SM_ERROR",
      detail: "n1SmMsg is not a 5GSM PDU session establishment request",
    });
  }
  const smContextRef = ctx.newId();
  const ue = ctx.ues.ue(supi);
  ctx.ues.smContexts.set(smContextRef, {
    smContextRef,
    supi,
    pduSessionId,
    dnn: stringIe(body.json, "dnn"),
    state: "CREATED",
  });
  ue.pduSessions.set(pduSessionId, smContextRef);
  return jsonResponse(201, {
    pduSessionId,
    sNssai: body.json.sNssai,
    smfServiceInstanceId: "smf-pdusession-1",
  }, { location: `${ctx.apiRoot}${base}/${smContextRef}` });
}

/** N2 handover (TS 23.502 §4.9.1.3; TS 29.502 §5.2.2.3.4): PREPARING → PREPARED → COMPLETED. */
function handover(sm: SmContext, body: SmUpdate, hoState: unknown, n2Type: unknown) {
  if (hoState === "PREPARING" && n2Type === "HANDOVER_REQUIRED") {
    referencedPart(body, body.json.n2SmInfo, "/n2SmInfo", NGAP_TYPE);
    if (body.json.targetId === undefined) {
      throw new ProblemError(400, {
        cause: "MANDATORY_IE_MISSING",
        detail: "A handover preparation needs targetId",
        invalidParams: [{ param: "/targetId", reason: "mandatory IE missing" }],
      });
    }
    if (sm.state !== "ACTIVATED" && sm.state !== "HO_PREPARING") {
      throw outOfOrder(`Handover preparation for SM context in state ${sm.state}`);
    }
    sm.state = "HO_PREPARING";
    return n2Answer(sm, { hoState: "PREPARING" }, "PDU_RES_SETUP_REQ", 48);
  }
  if (hoState === "PREPARED" && n2Type === "HANDOVER_REQ_ACK") {
    referencedPart(body, body.json.n2SmInfo, "/n2SmInfo", NGAP_TYPE);
    if (sm.state !== "HO_PREPARING" && sm.state !== "HO_PREPARED") {
      throw outOfOrder(
        `Handover request acknowledge for SM context in state ${sm.state} ` +
          "(the handover preparation comes first)",
      );
    }
    sm.state = "HO_PREPARED";
    return n2Answer(sm, { hoState: "PREPARED" }, "HANDOVER_CMD", 32);
  }
  if (hoState === "COMPLETED") {
    if (sm.state === "ACTIVATED") return jsonResponse(200, { hoState: "COMPLETED" });
    if (sm.state !== "HO_PREPARED") {
      throw outOfOrder(`Handover completion for SM context in state ${sm.state}`);
    }
    sm.state = "ACTIVATED";
    return jsonResponse(200, { hoState: "COMPLETED" });
  }
  throw new ProblemError(400, {
    cause: "MANDATORY_IE_INCORRECT",
    detail: "hoState PREPARING needs n2SmInfoType HANDOVER_REQUIRED, PREPARED needs " +
      "HANDOVER_REQ_ACK; COMPLETED needs neither",
    invalidParams: [{ param: "/hoState", reason: "unsupported handover update" }],
  });
}

/**
 * The user plane's updates (TS 29.502 §5.2.2.3.1): the N2 setup response
 * activates it, an AN release deactivates it, a service request reactivates it.
 */
function userPlaneUpdate(sm: SmContext, body: SmUpdate) {
  if (body.json.n2SmInfoType === "PDU_RES_SETUP_RSP") {
    referencedPart(body, body.json.n2SmInfo, "/n2SmInfo", NGAP_TYPE);
    if (sm.state === "ACTIVATED") return jsonResponse(200, { upCnxState: "ACTIVATED" });
    if (sm.state !== "N1N2_SENT" && sm.state !== "ACTIVATING") {
      throw outOfOrder(
        `PDU session resource setup response for SM context in state ${sm.state} ` +
          "(the N1N2 message transfer or a service request comes first)",
      );
    }
    sm.state = "ACTIVATED";
    return jsonResponse(200, { upCnxState: "ACTIVATED" });
  }
  if (body.json.upCnxState === "DEACTIVATED") {
    if (sm.state !== "ACTIVATED" && sm.state !== "DEACTIVATED") {
      throw outOfOrder(`AN release for SM context in state ${sm.state}`);
    }
    sm.state = "DEACTIVATED";
    return jsonResponse(200, { upCnxState: "DEACTIVATED" });
  }
  if (body.json.upCnxState === "ACTIVATING") {
    if (sm.state !== "DEACTIVATED" && sm.state !== "ACTIVATING") {
      throw outOfOrder(
        `Service request for SM context in state ${sm.state} (only a deactivated ` +
          "user plane can be activated)",
      );
    }
    sm.state = "ACTIVATING";
    return n2Answer(sm, { upCnxState: "ACTIVATING" }, "PDU_RES_SETUP_REQ", 48);
  }
  throw new ProblemError(400, {
    cause: "MANDATORY_IE_INCORRECT",
    detail: "SmContextUpdateData needs n2SmInfoType PDU_RES_SETUP_RSP or upCnxState " +
      "DEACTIVATED or ACTIVATING",
    invalidParams: [{ param: "/upCnxState", reason: "unsupported update" }],
  });
}

/** The SMF's routes. */
export function smfRoutes(ctx: NfContext): NfRoute[] {
  const base = `${SMF_API}/sm-contexts`;

  function context(ref: string, path: string): SmContext {
    const sm = ctx.ues.smContexts.get(ref);
    if (sm === undefined) throw contextNotFound("SM context", ref, path);
    return sm;
  }

  return [{
    path: base,
    methods: { POST: (request) => createSmContext(ctx, request, base) },
  }, {
    path: `${base}/{smContextRef}/modify`,
    methods: {
      // TS 29.502 §5.2.2.3.1: POST SmContextUpdateData (+ N2 SM) → 200 SmContextUpdatedData.
      POST(request, p) {
        const sm = context(p.smContextRef, request.path);
        const body = jsonWithParts(request, "SmContextUpdateData", []);
        const hoState = body.json.hoState;
        if (hoState !== undefined) return handover(sm, body, hoState, body.json.n2SmInfoType);
        return userPlaneUpdate(sm, body);
      },
    },
  }];
}
