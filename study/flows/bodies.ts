/**
 * Request bodies of the SBI call flows, shaped after the TS 29.5xx data types
 * (field names and nesting from the specifications; values are those of a
 * small test PLMN 001/01). Each builder takes the flow's variables and returns
 * the bytes and their content type; multipart bodies carry their binary parts
 * as TS 29.500 §6.1 describes. docs/flows.md lists every body with its size.
 */
import { buildMultipart } from "../../handler/multipart.ts";
import {
  EPD_5GSM,
  MSG_PDU_SESSION_ESTABLISHMENT_ACCEPT,
  MSG_PDU_SESSION_ESTABLISHMENT_REQUEST,
  n2SmBytes,
  NAS_TYPE,
  NGAP_TYPE,
  simulatedResStar,
} from "../../handler/nf/mod.ts";

/** A request body and its content type. */
export interface Body {
  contentType: string;
  bytes: Uint8Array;
}

/** The variables a flow has gathered so far (its UE, its NFs, captured fields). */
export type FlowVars = Record<string, string>;

const encoder = new TextEncoder();
const PLMN = { mcc: "001", mnc: "01" };
const SNSSAI = { sst: 1, sd: "000001" };
const GUAMI = { plmnId: PLMN, amfId: "cafe00" };
const BOUNDARY = "sbilab-flow-part";

function json(value: unknown, contentType = "application/json"): Body {
  return { contentType, bytes: encoder.encode(JSON.stringify(value)) };
}

function multipart(value: unknown, binaries: [string, string, Uint8Array][]): Body {
  return {
    contentType: `multipart/related; boundary=${BOUNDARY}`,
    bytes: buildMultipart([
      {
        headers: { "Content-Type": "application/json" },
        body: encoder.encode(JSON.stringify(value)),
      },
      ...binaries.map(([id, type, body]) => ({
        headers: { "Content-Type": type, "Content-Id": id },
        body,
      })),
    ], BOUNDARY),
  };
}

function need(v: FlowVars, name: string): string {
  const value = v[name];
  if (value === undefined) throw new RangeError(`Flow variable ${name} is not set`);
  return value;
}

/**
 * A 5GSM message (TS 24.501 §8.3): EPD, PDU session id, PTI, message type,
 * then `length − 4` bytes of IEs (deterministic filler standing in for them).
 */
export function nasSm(type: number, pduSessionId: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  out.set([EPD_5GSM, pduSessionId, 1, type]);
  for (let i = 4; i < length; i++) out[i] = (i * 7) & 0x7f;
  return out;
}

/** Body builders by name (the `body` field of a flow step). */
export const BODIES = {
  /** TS 29.509 §6.1.6.2.2 AuthenticationInfo. */
  authenticationInfo: (v: FlowVars) =>
    json({
      supiOrSuci: need(v, "suci"),
      servingNetworkName: "5G:mnc001.mcc001.3gppnetwork.org",
      amfInstanceId: need(v, "amfInstanceId"),
    }),
  /** TS 29.509 §6.1.6.2.5 ConfirmationData (RES* of the simulated UE). */
  confirmationData: (v: FlowVars) => json({ resStar: simulatedResStar(need(v, "rand")) }),
  /** TS 29.503 §6.2.6.2.2 Amf3GppAccessRegistration. */
  amf3GppAccessRegistration: (v: FlowVars) =>
    json({
      amfInstanceId: need(v, "amfInstanceId"),
      deregCallbackUri: `http://amf.lab/namf-callback/v1/${need(v, "supi")}/dereg-notify`,
      guami: GUAMI,
      ratType: "NR",
      initialRegistrationInd: true,
      pei: `imeisv-${need(v, "msin").padStart(16, "0").slice(-16)}`,
    }),
  /** TS 29.503 §6.1.6.2.3 SdmSubscription. */
  sdmSubscription: (v: FlowVars) =>
    json({
      nfInstanceId: need(v, "amfInstanceId"),
      callbackReference: `http://amf.lab/namf-callback/v1/${need(v, "supi")}/sdm-notify`,
      monitoredResourceUris: [
        `/nudm-sdm/v2/${need(v, "supi")}/am-data`,
        `/nudm-sdm/v2/${need(v, "supi")}/smf-select-data`,
        `/nudm-sdm/v2/${need(v, "supi")}/ue-context-in-smf-data`,
      ],
      implicitUnsubscribe: true,
      plmnId: PLMN,
    }),
  /** TS 29.507 §5.6.2.3 PolicyAssociationRequest. */
  policyAssociationRequest: (v: FlowVars) =>
    json({
      notificationUri: `http://amf.lab/namf-callback/v1/${need(v, "supi")}/am-policy`,
      supi: need(v, "supi"),
      accessType: "3GPP_ACCESS",
      ratType: "NR",
      servingPlmn: PLMN,
      guami: GUAMI,
      userLoc: {
        nrLocation: {
          tai: { plmnId: PLMN, tac: "000001" },
          ncgi: { plmnId: PLMN, nrCellId: "000000010" },
        },
      },
      allowedSnssais: [SNSSAI],
      suppFeat: "1",
    }),
  /** TS 29.502 §6.1.6.2.2 SmContextCreateData with the N1 SM PDU session establishment request. */
  smContextCreateData: (v: FlowVars) => {
    const id = Number(need(v, "pduSessionId"));
    return multipart({
      supi: need(v, "supi"),
      pei: `imeisv-${need(v, "msin").padStart(16, "0").slice(-16)}`,
      pduSessionId: id,
      dnn: "internet",
      sNssai: SNSSAI,
      servingNfId: need(v, "amfInstanceId"),
      guami: GUAMI,
      servingNetwork: PLMN,
      requestType: "INITIAL_REQUEST",
      anType: "3GPP_ACCESS",
      ratType: "NR",
      ueLocation: { nrLocation: { tai: { plmnId: PLMN, tac: "000001" } } },
      smContextStatusUri: `http://amf.lab/namf-callback/v1/${need(v, "supi")}/sm-status/${id}`,
      n1SmMsg: { contentId: "n1-sm-msg" },
    }, [["n1-sm-msg", NAS_TYPE, nasSm(MSG_PDU_SESSION_ESTABLISHMENT_REQUEST, id, 44)]]);
  },
  /** TS 29.512 §5.6.2.2 SmPolicyContextData. */
  smPolicyContextData: (v: FlowVars) =>
    json({
      supi: need(v, "supi"),
      pduSessionId: Number(need(v, "pduSessionId")),
      pduSessionType: "IPV4",
      dnn: "internet",
      notificationUri: `http://smf.lab/nsmf-callback/v1/sm-policy/${need(v, "smContextRef")}`,
      accessType: "3GPP_ACCESS",
      ratType: "NR",
      servingNetwork: PLMN,
      ipv4Address: need(v, "ueIpv4"),
      subsSessAmbr: { uplink: "500 Mbps", downlink: "1 Gbps" },
      subsDefQos: {
        "5qi": 9,
        arp: { priorityLevel: 8, preemptCap: "NOT_PREEMPT", preemptVuln: "PREEMPTABLE" },
        priorityLevel: 8,
      },
      sliceInfo: SNSSAI,
      suppFeat: "1",
    }),
  /**
   * TS 29.518 §6.1.6.2.2 N1N2MessageTransferReqData with the N1 SM PDU
   * session establishment accept and the N2 PDU session resource setup request.
   */
  n1n2MessageTransferReqData: (v: FlowVars) => {
    const id = Number(need(v, "pduSessionId"));
    return multipart({
      n1MessageContainer: { n1MessageClass: "SM", n1MessageContent: { contentId: "n1-msg" } },
      n2InfoContainer: {
        n2InformationClass: "SM",
        smInfo: {
          pduSessionId: id,
          n2InfoContent: { ngapIeType: "PDU_RES_SETUP_REQ", ngapData: { contentId: "n2-msg" } },
          sNssai: SNSSAI,
        },
      },
      pduSessionId: id,
      skipInd: false,
    }, [
      ["n1-msg", NAS_TYPE, nasSm(MSG_PDU_SESSION_ESTABLISHMENT_ACCEPT, id, 60)],
      ["n2-msg", NGAP_TYPE, n2SmBytes("setup-req", id, 48)],
    ]);
  },
  /** TS 29.502 §6.1.6.2.3 SmContextUpdateData with the N2 PDU session resource setup response. */
  smContextUpdateN2SetupRsp: (v: FlowVars) => {
    const id = Number(need(v, "pduSessionId"));
    return multipart({
      n2SmInfo: { contentId: "n2-sm-info" },
      n2SmInfoType: "PDU_RES_SETUP_RSP",
      anTypeCanBeChanged: false,
    }, [["n2-sm-info", NGAP_TYPE, n2SmBytes("setup-rsp", id, 24)]]);
  },
  /** TS 29.502 §6.1.6.2.3 SmContextUpdateData for handover preparation, with the N2 handover required transfer. */
  smContextUpdateHoRequired: (v: FlowVars) =>
    multipart({
      hoState: "PREPARING",
      targetId: {
        ranNodeId: { plmnId: PLMN, gNbId: { bitLength: 22, gNBValue: "000002" } },
        tai: { plmnId: PLMN, tac: "000002" },
      },
      n2SmInfo: { contentId: "n2-sm-info" },
      n2SmInfoType: "HANDOVER_REQUIRED",
    }, [[
      "n2-sm-info",
      NGAP_TYPE,
      n2SmBytes("ho-required", Number(need(v, "pduSessionId")), 16),
    ]]),
  /** TS 29.502 §6.1.6.2.3 SmContextUpdateData with the target's N2 handover request acknowledge transfer. */
  smContextUpdateHoReqAck: (v: FlowVars) =>
    multipart({
      hoState: "PREPARED",
      n2SmInfo: { contentId: "n2-sm-info" },
      n2SmInfoType: "HANDOVER_REQ_ACK",
    }, [[
      "n2-sm-info",
      NGAP_TYPE,
      n2SmBytes("ho-req-ack", Number(need(v, "pduSessionId")), 40),
    ]]),
  /** TS 29.502 §6.1.6.2.3 SmContextUpdateData completing the handover at the target. */
  smContextUpdateHoComplete: () =>
    json({
      hoState: "COMPLETED",
      ueLocation: { nrLocation: { tai: { plmnId: PLMN, tac: "000002" } } },
    }),
  /** TS 29.502 §6.1.6.2.3 SmContextUpdateData for an AN release (user plane deactivated). */
  smContextUpdateDeactivate: () =>
    json({ upCnxState: "DEACTIVATED", cause: "REL_DUE_TO_REACTIVATION" }),
  /** TS 29.502 §6.1.6.2.3 SmContextUpdateData for a service request (user plane activating). */
  smContextUpdateActivate: () =>
    json({
      upCnxState: "ACTIVATING",
      ueLocation: { nrLocation: { tai: { plmnId: PLMN, tac: "000001" } } },
    }),
  /** TS 29.510 §6.1.6.2.2 NFProfile of the NF named by `nfType` / `nfInstanceId`. */
  nfProfile: (v: FlowVars) =>
    json({
      nfInstanceId: need(v, "nfInstanceId"),
      nfType: need(v, "nfType"),
      nfStatus: "REGISTERED",
      heartBeatTimer: 10,
      plmnList: [PLMN],
      sNssais: [SNSSAI],
      fqdn: `${need(v, "nfType").toLowerCase()}.lab`,
      nfServices: [{
        serviceInstanceId: "1",
        serviceName: need(v, "serviceName"),
        versions: [{ apiVersionInUri: "v1", apiFullVersion: "1.0.0" }],
        scheme: "http",
        nfServiceStatus: "REGISTERED",
      }],
    }),
  /** TS 29.510 §5.2.2.3.2 heartbeat: a JSON Patch replacing nfStatus. */
  heartbeat: () =>
    json(
      [{ op: "replace", path: "/nfStatus", value: "REGISTERED" }],
      "application/json-patch+json",
    ),
} as const satisfies Record<string, (v: FlowVars) => Body>;

/** Name of a body builder. */
export type BodyName = keyof typeof BODIES;
