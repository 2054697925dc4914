/**
 * A mock UDM: context management (TS 29.503 `Nudm_UECM`, the AMF's
 * registration) and subscriber data management (`Nudm_SDM`: am-data,
 * smf-select-data, ue-context-in-smf-data, sm-data, SDM subscriptions).
 * It keeps the order of TS 23.502 §4.2.2.2.2: UECM registration needs a UE
 * authenticated at the AUSF, SDM needs the UECM registration.
 */
import { ProblemError } from "../problem.ts";
import {
  jsonBody,
  jsonResponse,
  type NfContext,
  type NfRoute,
  stringIe,
  supiOf,
} from "./_shared.ts";
import type { UeState } from "./ue_registry.ts";

/** Base path of UECM. */
export const UECM_API = "/nudm-uecm/v1";
/** Base path of SDM. */
export const SDM_API = "/nudm-sdm/v2";

const PLMN = { mcc: "001", mnc: "01" };
const SNSSAI = { sst: 1, sd: "000001" };

function ueId(raw: string, path: string): string {
  const supi = supiOf(raw);
  if (supi === undefined) {
    throw new ProblemError(404, {
      cause: "USER_NOT_FOUND",
      detail: `${raw} is not an IMSI SUPI`,
      instance: path,
    });
  }
  return supi;
}

/** The UE, which must hold an AMF registration (else 404 USER_NOT_FOUND). */
function registered(ctx: NfContext, raw: string, path: string): UeState {
  const ue = ctx.ues.ues.get(ueId(raw, path));
  if (ue?.amfRegistration === undefined) {
    throw new ProblemError(404, {
      cause: "USER_NOT_FOUND",
      detail: `${raw} has no AMF registration at the UDM (UECM registration comes first)`,
      instance: path,
    });
  }
  return ue;
}

/** The UDM's routes. */
export function udmRoutes(ctx: NfContext): NfRoute[] {
  return [uecmRoute(ctx), ...sdmDataRoutes(ctx), sdmSubscriptionRoute(ctx)];
}

/** UECM: the AMF's registration for 3GPP access. */
function uecmRoute(ctx: NfContext): NfRoute {
  return {
    path: `${UECM_API}/{ueId}/registrations/amf-3gpp-access`,
    methods: {
      // TS 29.503 §5.3.2.2.2: PUT Amf3GppAccessRegistration → 201 (new) or 200 (replaced).
      PUT(request, p) {
        const supi = ueId(p.ueId, request.path);
        const body = jsonBody(request, "Amf3GppAccessRegistration", [
          "amfInstanceId",
          "deregCallbackUri",
          "guami",
          "ratType",
        ]);
        stringIe(body, "amfInstanceId");
        const ue = ctx.ues.ues.get(supi);
        if (!ue?.authenticated) {
          throw new ProblemError(403, {
            cause: "REAUTHENTICATION_REQUIRED",
            detail: `${supi} has not been authenticated (AUSF 5G-AKA confirmation comes first)`,
          });
        }
        const existed = ue.amfRegistration !== undefined;
        ue.amfRegistration = body;
        if (existed) return jsonResponse(200, body);
        return jsonResponse(201, body, { location: `${ctx.apiRoot}${request.path}` });
      },
    },
  };
}

/** SDM's data of a registered UE: am-data, smf-select-data, ue-context-in-smf-data, sm-data. */
function sdmDataRoutes(ctx: NfContext): NfRoute[] {
  return [{
    path: `${SDM_API}/{supi}/am-data`,
    methods: {
      // TS 29.503 §6.1.6.2.4 AccessAndMobilitySubscriptionData.
      GET(request, p) {
        const ue = registered(ctx, p.supi, request.path);
        return jsonResponse(200, {
          gpsis: [`msisdn-${ue.supi.slice(-10)}`],
          subscribedUeAmbr: { uplink: "1 Gbps", downlink: "2 Gbps" },
          nssai: { defaultSingleNssais: [SNSSAI] },
          ratRestrictions: [],
          subsRegTimer: 3240,
          ueUsageType: 0,
          mpsPriority: false,
          mcsPriority: false,
        });
      },
    },
  }, {
    path: `${SDM_API}/{supi}/smf-select-data`,
    methods: {
      // TS 29.503 §6.1.6.2.5 SmfSelectionSubscriptionData.
      GET(request, p) {
        registered(ctx, p.supi, request.path);
        return jsonResponse(200, {
          subscribedSnssaiInfos: {
            "1-000001": { dnnInfos: [{ dnn: "internet", defaultDnnIndicator: true }] },
          },
        });
      },
    },
  }, {
    path: `${SDM_API}/{supi}/ue-context-in-smf-data`,
    methods: {
      // TS 29.503 §6.1.6.2.9 UeContextInSmfData: the PDU sessions the UE holds.
      GET(request, p) {
        const ue = registered(ctx, p.supi, request.path);
        const pduSessions: Record<string, unknown> = {};
        for (const [id] of ue.pduSessions) {
          pduSessions[String(id)] = {
            pduSessionId: id,
            smfInstanceId: "smf",
            plmnId: PLMN,
            dnn: "internet",
          };
        }
        return jsonResponse(200, { pduSessions });
      },
    },
  }, {
    path: `${SDM_API}/{supi}/sm-data`,
    methods: {
      // TS 29.503 §6.1.6.2.8 SessionManagementSubscriptionData (an array of one).
      GET(request, p) {
        registered(ctx, p.supi, request.path);
        return jsonResponse(200, [{
          singleNssai: SNSSAI,
          dnnConfigurations: {
            internet: {
              pduSessionTypes: { defaultSessionType: "IPV4", allowedSessionTypes: ["IPV4"] },
              sscModes: { defaultSscMode: "SSC_MODE_1", allowedSscModes: ["SSC_MODE_1"] },
              "5gQosProfile": {
                "5qi": 9,
                arp: {
                  priorityLevel: 8,
                  preemptCap: "NOT_PREEMPT",
                  preemptVuln: "PREEMPTABLE",
                },
                priorityLevel: 8,
              },
              sessionAmbr: { uplink: "500 Mbps", downlink: "1 Gbps" },
            },
          },
        }]);
      },
    },
  }];
}

/** SDM subscriptions of a registered UE. */
function sdmSubscriptionRoute(ctx: NfContext): NfRoute {
  return {
    path: `${SDM_API}/{ueId}/sdm-subscriptions`,
    methods: {
      // TS 29.503 §5.2.2.3.2: POST SdmSubscription → 201 with the subscription and Location.
      POST(request, p) {
        registered(ctx, p.ueId, request.path);
        const body = jsonBody(request, "SdmSubscription", [
          "nfInstanceId",
          "callbackReference",
          "monitoredResourceUris",
        ]);
        if (!Array.isArray(body.monitoredResourceUris) || body.monitoredResourceUris.length === 0) {
          throw new ProblemError(400, {
            cause: "MANDATORY_IE_INCORRECT",
            detail: "monitoredResourceUris must be a non-empty array",
            invalidParams: [{ param: "/monitoredResourceUris", reason: "must be non-empty" }],
          });
        }
        const subscriptionId = ctx.newId();
        const href = `${ctx.apiRoot}${request.path}/${subscriptionId}`;
        ctx.ues.resources.set(href, p.ueId);
        return jsonResponse(201, { ...body, subscriptionId }, { location: href });
      },
    },
  };
}
