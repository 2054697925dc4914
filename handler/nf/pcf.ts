/**
 * A mock PCF: AM policy associations (TS 29.507 `Npcf_AMPolicyControl`) and
 * SM policy associations (TS 29.512 `Npcf_SMPolicyControl`). Both need a UE
 * registered at the UDM; an SM policy also needs the SMF's SM context.
 */
import { ProblemError } from "../problem.ts";
import {
  integerIe,
  jsonBody,
  jsonResponse,
  type NfContext,
  type NfRoute,
  stringIe,
} from "./_shared.ts";

/** Base path of AM policy control. */
export const AM_POLICY_API = "/npcf-am-policy-control/v1";
/** Base path of SM policy control. */
export const SM_POLICY_API = "/npcf-smpolicycontrol/v1";

/** The PCF's routes. */
export function pcfRoutes(ctx: NfContext): NfRoute[] {
  function registeredSupi(body: Record<string, unknown>): string {
    const supi = stringIe(body, "supi");
    if (ctx.ues.ues.get(supi)?.amfRegistration === undefined) {
      throw new ProblemError(400, {
        cause: "USER_UNKNOWN",
        detail: `${supi} is not registered (UDM registration comes first)`,
        invalidParams: [{ param: "/supi", reason: "not registered" }],
      });
    }
    return supi;
  }

  return [{
    path: `${AM_POLICY_API}/policies`,
    methods: {
      // TS 29.507 §4.2.2: POST PolicyAssociationRequest → 201 PolicyAssociation + Location.
      POST(request) {
        const req = jsonBody(request, "PolicyAssociationRequest", [
          "notificationUri",
          "supi",
          "suppFeat",
        ]);
        registeredSupi(req);
        const polAssoId = ctx.newId();
        const href = `${ctx.apiRoot}${AM_POLICY_API}/policies/${polAssoId}`;
        ctx.ues.resources.set(href, String(req.supi));
        return jsonResponse(201, {
          request: req,
          triggers: ["LOC_CH", "PRA_CH"],
          servAreaRes: {
            restrictionType: "ALLOWED_AREAS",
            areas: [{ tacs: ["000001", "000002"] }],
            maxNumOfTAs: 16,
          },
          rfsp: 1,
          suppFeat: req.suppFeat,
        }, { location: href });
      },
    },
  }, {
    path: `${SM_POLICY_API}/sm-policies`,
    methods: {
      // TS 29.512 §4.2.2: POST SmPolicyContextData → 201 SmPolicyDecision + Location.
      POST(request) {
        const data = jsonBody(request, "SmPolicyContextData", [
          "supi",
          "pduSessionId",
          "dnn",
          "sliceInfo",
          "notificationUri",
        ]);
        const supi = registeredSupi(data);
        const pduSessionId = integerIe(data, "pduSessionId", 1, 255);
        if (!ctx.ues.ues.get(supi)!.pduSessions.has(pduSessionId)) {
          throw new ProblemError(400, {
            cause: "PDU_SESSION_NOT_AVAILABLE",
            detail: `${supi} has no SM context for PDU session ${pduSessionId} at the SMF`,
            invalidParams: [{ param: "/pduSessionId", reason: "no SM context" }],
          });
        }
        const smPolicyId = ctx.newId();
        const href = `${ctx.apiRoot}${SM_POLICY_API}/sm-policies/${smPolicyId}`;
        ctx.ues.resources.set(href, supi);
        const ambr = (data.subsSessAmbr as unknown) ?? { uplink: "500 Mbps", downlink: "1 Gbps" };
        return jsonResponse(201, {
          sessRules: {
            SessRule1: {
              sessRuleId: "SessRule1",
              authSessAmbr: ambr,
              authDefQos: {
                "5qi": 9,
                arp: { priorityLevel: 8, preemptCap: "NOT_PREEMPT", preemptVuln: "PREEMPTABLE" },
                priorityLevel: 8,
              },
            },
          },
          pccRules: {
            PccRule1: {
              pccRuleId: "PccRule1",
              flowInfos: [{
                flowDescription: "permit out ip from any to assigned",
                flowDirection: "BIDIRECTIONAL",
              }],
              precedence: 255,
              refQosData: ["QosData1"],
            },
          },
          qosDecs: {
            QosData1: { qosId: "QosData1", "5qi": 9, maxbrUl: "100 Mbps", maxbrDl: "200 Mbps" },
          },
          policyCtrlReqTriggers: ["PLMN_CH", "RES_MO_RE", "AC_TY_CH"],
          online: false,
          offline: true,
        }, { location: href });
      },
    },
  }];
}
