/**
 * A mock AMF (TS 29.518 `Namf_Communication`): the N1N2 message transfer an
 * SMF sends after creating an SM context, with the N1 SM message and the N2
 * SM information as binary parts.
 */
import { ProblemError } from "../problem.ts";
import {
  contextNotFound,
  integerIe,
  jsonResponse,
  jsonWithParts,
  NAS_TYPE,
  type NfContext,
  type NfRoute,
  NGAP_TYPE,
  referencedPart,
  supiOf,
} from "./_shared.ts";

/** Base path of the API. */
export const AMF_API = "/namf-comm/v1";

function pick(value: unknown, ...keys: string[]): unknown {
  let v = value;
  for (const k of keys) {
    v = v !== null && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined;
  }
  return v;
}

/** The AMF's routes. */
export function amfRoutes(ctx: NfContext): NfRoute[] {
  return [{
    path: `${AMF_API}/ue-contexts/{ueContextId}/n1-n2-messages`,
    methods: {
      // TS 29.518 §5.2.2.3.1: POST N1N2MessageTransferReqData (+ N1, N2) → 200 N1N2MessageTransferRspData.
      POST(request, p) {
        const supi = supiOf(p.ueContextId);
        const ue = supi === undefined ? undefined : ctx.ues.ues.get(supi);
        if (ue?.amfRegistration === undefined) {
          throw contextNotFound("UE context", p.ueContextId, request.path);
        }
        const body = jsonWithParts(request, "N1N2MessageTransferReqData", []);
        const pduSessionId = integerIe(body.json, "pduSessionId", 1, 15);
        const n1 = pick(body.json, "n1MessageContainer", "n1MessageContent");
        const n2 = pick(body.json, "n2InfoContainer", "smInfo", "n2InfoContent", "ngapData");
        if (n1 === undefined && n2 === undefined) {
          throw new ProblemError(400, {
            cause: "MANDATORY_IE_MISSING",
            detail: "N1N2MessageTransferReqData carries neither an N1 message nor N2 information",
            invalidParams: [{ param: "/n1MessageContainer", reason: "mandatory IE missing" }],
          });
        }
        if (n1 !== undefined) {
          referencedPart(body, n1, "/n1MessageContainer/n1MessageContent", NAS_TYPE);
        }
        if (n2 !== undefined) {
          referencedPart(body, n2, "/n2InfoContainer/smInfo/n2InfoContent/ngapData", NGAP_TYPE);
        }
        const ref = ue.pduSessions.get(pduSessionId);
        const sm = ref === undefined ? undefined : ctx.ues.smContexts.get(ref);
        if (sm === undefined) {
          throw contextNotFound(`PDU session ${pduSessionId} of`, p.ueContextId, request.path);
        }
        if (sm.state === "CREATED") sm.state = "N1N2_SENT";
        return jsonResponse(200, { cause: "N1_N2_TRANSFER_INITIATED" });
      },
    },
  }];
}
