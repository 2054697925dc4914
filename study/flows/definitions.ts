/**
 * The SBI call flows as data: each flow is an ordered list of steps, each step
 * one request from one NF to another, whose path and body may use what earlier
 * steps captured (a `Location`, an `authCtxId`, an `smContextRef`). The runner
 * (`runner.ts`) interprets them; nothing here sends anything.
 */
import type { BodyName } from "./bodies.ts";

/** The NFs that send or serve flow requests (`NBENCH` is the benchmark route). */
export type NfType = "AMF" | "SMF" | "AUSF" | "UDM" | "PCF" | "NRF" | "NBENCH";

/** Where a step takes a value from its response. */
export type Capture =
  /** The last path segment of the `Location` header. */
  | { from: "location-id" }
  /** The path of the `Location` header (origin dropped). */
  | { from: "location-path" }
  /** A JSON Pointer into the JSON body (or the JSON root part of a multipart body). */
  | { from: "json"; pointer: string };

/** One request of a flow. */
export interface FlowStep {
  /** Stable name, `<nf>.<operation>`, used in row ids and failure counts. */
  name: string;
  /** What it does, in words, with the spec clause. */
  title: string;
  /** The NF that sends it (owner of the connection). */
  from: NfType;
  /** The NF that serves it. */
  to: NfType;
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Path and query; `{name}` inserts a variable percent-encoded, `{+name}` as is. */
  path: string;
  /** Body builder, when the request has a body. */
  body?: BodyName;
  /** Status codes that count as success. */
  expect: number[];
  /** Variables to take from the response. */
  capture?: Record<string, Capture>;
  /** JSON fields the response must hold with these values. */
  require?: Record<string, string>;
  /** An NRF discovery of this NF type: skipped while the sender's cached result is valid. */
  discover?: NfType;
}

/** A flow: steps run in order for one UE. */
export interface FlowDefinition {
  /** Stable name used in options and row ids. */
  name: string;
  /** Title for reports. */
  title: string;
  /** Where the flow comes from (TS 23.502 clause). */
  source: string;
  steps: FlowStep[];
}

function discovery(from: NfType, target: NfType): FlowStep {
  return {
    name: `nrf.discover-${target.toLowerCase()}`,
    title: `NRF: ${from} discovers ${target} (TS 29.510 §5.3.2.2, cached per validityPeriod)`,
    from,
    to: "NRF",
    method: "GET",
    path: `/nnrf-disc/v1/nf-instances?target-nf-type=${target}&requester-nf-type=${from}`,
    expect: [200],
    discover: target,
  };
}

/** The AMF passes the RAN's N2 PDU session resource setup response to the SMF. */
const N2_SETUP_RESPONSE: FlowStep = {
  name: "smf.update-n2-setup-rsp",
  title: "SMF: SM context update with the N2 setup response (TS 29.502 §5.2.2.3.1)",
  from: "AMF",
  to: "SMF",
  method: "POST",
  path: "/nsmf-pdusession/v1/sm-contexts/{smContextRef}/modify",
  body: "smContextUpdateN2SetupRsp",
  expect: [200],
  require: { "/upCnxState": "ACTIVATED" },
};

/** UE initial registration, TS 23.502 §4.2.2.2.2 (the SBI part, steps 8–16). */
export const REGISTRATION: FlowDefinition = {
  name: "registration",
  title: "UE initial registration",
  source: "TS 23.502 §4.2.2.2.2",
  steps: [
    discovery("AMF", "AUSF"),
    {
      name: "ausf.authenticate",
      title: "AUSF: start 5G-AKA (TS 29.509 §5.2.2.2.2)",
      from: "AMF",
      to: "AUSF",
      method: "POST",
      path: "/nausf-auth/v1/ue-authentications",
      body: "authenticationInfo",
      expect: [201],
      capture: {
        authCtxId: { from: "location-id" },
        confirmPath: { from: "json", pointer: "/_links/5g-aka/href" },
        rand: { from: "json", pointer: "/5gAuthData/rand" },
      },
    },
    {
      name: "ausf.confirm",
      title: "AUSF: 5G-AKA confirmation with RES* (TS 29.509 §5.2.2.2.2)",
      from: "AMF",
      to: "AUSF",
      method: "PUT",
      path: "{+confirmPath}",
      body: "confirmationData",
      expect: [200],
      require: { "/authResult": "AUTHENTICATION_SUCCESS" },
      capture: { supi: { from: "json", pointer: "/supi" } },
    },
    discovery("AMF", "UDM"),
    {
      name: "udm.uecm-register",
      title: "UDM: UECM AMF registration (TS 29.503 §5.3.2.2.2)",
      from: "AMF",
      to: "UDM",
      method: "PUT",
      path: "/nudm-uecm/v1/{supi}/registrations/amf-3gpp-access",
      body: "amf3GppAccessRegistration",
      expect: [201, 200],
    },
    {
      name: "udm.sdm-am-data",
      title: "UDM: SDM get am-data (TS 29.503 §5.2.2.2.3)",
      from: "AMF",
      to: "UDM",
      method: "GET",
      path:
        "/nudm-sdm/v2/{supi}/am-data?plmn-id=%7B%22mcc%22%3A%22001%22%2C%22mnc%22%3A%2201%22%7D",
      expect: [200],
    },
    {
      name: "udm.sdm-smf-select-data",
      title: "UDM: SDM get smf-select-data (TS 29.503 §5.2.2.2.4)",
      from: "AMF",
      to: "UDM",
      method: "GET",
      path: "/nudm-sdm/v2/{supi}/smf-select-data",
      expect: [200],
    },
    {
      name: "udm.sdm-ue-context-in-smf-data",
      title: "UDM: SDM get ue-context-in-smf-data (TS 29.503 §5.2.2.2.5)",
      from: "AMF",
      to: "UDM",
      method: "GET",
      path: "/nudm-sdm/v2/{supi}/ue-context-in-smf-data",
      expect: [200],
    },
    {
      name: "udm.sdm-subscribe",
      title: "UDM: SDM subscription (TS 29.503 §5.2.2.3.2)",
      from: "AMF",
      to: "UDM",
      method: "POST",
      path: "/nudm-sdm/v2/{supi}/sdm-subscriptions",
      body: "sdmSubscription",
      expect: [201],
      capture: { sdmSubscriptionId: { from: "location-id" } },
    },
    discovery("AMF", "PCF"),
    {
      name: "pcf.am-policy-create",
      title: "PCF: AM policy association create (TS 29.507 §4.2.2)",
      from: "AMF",
      to: "PCF",
      method: "POST",
      path: "/npcf-am-policy-control/v1/policies",
      body: "policyAssociationRequest",
      expect: [201],
      capture: { polAssoPath: { from: "location-path" } },
    },
  ],
};

/** PDU session establishment, TS 23.502 §4.3.2.2.1 (the SBI part, steps 3–16). */
export const PDU_SESSION: FlowDefinition = {
  name: "pdu-session",
  title: "PDU session establishment",
  source: "TS 23.502 §4.3.2.2.1",
  steps: [
    discovery("AMF", "SMF"),
    {
      name: "smf.create-sm-context",
      title: "SMF: SM context create, multipart with N1 SM (TS 29.502 §5.2.2.2.1)",
      from: "AMF",
      to: "SMF",
      method: "POST",
      path: "/nsmf-pdusession/v1/sm-contexts",
      body: "smContextCreateData",
      expect: [201],
      capture: { smContextRef: { from: "location-id" } },
    },
    discovery("SMF", "UDM"),
    {
      name: "udm.sdm-sm-data",
      title: "UDM: SDM get sm-data (TS 29.503 §5.2.2.2.6)",
      from: "SMF",
      to: "UDM",
      method: "GET",
      path:
        "/nudm-sdm/v2/{supi}/sm-data?single-nssai=%7B%22sst%22%3A1%2C%22sd%22%3A%22000001%22%7D&dnn=internet",
      expect: [200],
    },
    discovery("SMF", "PCF"),
    {
      name: "pcf.sm-policy-create",
      title: "PCF: SM policy association create (TS 29.512 §4.2.2.2)",
      from: "SMF",
      to: "PCF",
      method: "POST",
      path: "/npcf-smpolicycontrol/v1/sm-policies",
      body: "smPolicyContextData",
      expect: [201],
      capture: { smPolicyPath: { from: "location-path" } },
    },
    {
      name: "amf.n1n2-transfer",
      title: "AMF: N1N2 message transfer, multipart with N1 and N2 (TS 29.518 §5.2.2.3.1)",
      from: "SMF",
      to: "AMF",
      method: "POST",
      path: "/namf-comm/v1/ue-contexts/{supi}/n1-n2-messages",
      body: "n1n2MessageTransferReqData",
      expect: [200],
      require: { "/cause": "N1_N2_TRANSFER_INITIATED" },
    },
    N2_SETUP_RESPONSE,
  ],
};

/** Inter NG-RAN N2 handover without AMF change (TS 23.502 §4.9.1.3), the SMF's part. */
export const HANDOVER: FlowDefinition = {
  name: "handover",
  title: "N2 handover",
  source: "TS 23.502 §4.9.1.3",
  steps: [
    {
      name: "smf.update-ho-required",
      title: "SMF: SM context update, handover preparation with N2; N2 in a multipart answer",
      from: "AMF",
      to: "SMF",
      method: "POST",
      path: "/nsmf-pdusession/v1/sm-contexts/{smContextRef}/modify",
      body: "smContextUpdateHoRequired",
      expect: [200],
      require: { "/hoState": "PREPARING" },
    },
    {
      name: "smf.update-ho-req-ack",
      title: "SMF: SM context update, target's handover request acknowledge; handover command back",
      from: "AMF",
      to: "SMF",
      method: "POST",
      path: "/nsmf-pdusession/v1/sm-contexts/{smContextRef}/modify",
      body: "smContextUpdateHoReqAck",
      expect: [200],
      require: { "/hoState": "PREPARED" },
    },
    {
      name: "smf.update-ho-complete",
      title: "SMF: SM context update, handover completed (TS 29.502 §5.2.2.3.4)",
      from: "AMF",
      to: "SMF",
      method: "POST",
      path: "/nsmf-pdusession/v1/sm-contexts/{smContextRef}/modify",
      body: "smContextUpdateHoComplete",
      expect: [200],
      require: { "/hoState": "COMPLETED" },
    },
  ],
};

/** AN release (TS 23.502 §4.2.6) then UE-triggered service request (§4.2.3.2). */
export const SERVICE_REQUEST: FlowDefinition = {
  name: "service-request",
  title: "AN release and service request",
  source: "TS 23.502 §4.2.6, §4.2.3.2",
  steps: [
    {
      name: "smf.update-deactivate",
      title: "SMF: SM context update, user plane deactivated (TS 29.502 §5.2.2.3.1)",
      from: "AMF",
      to: "SMF",
      method: "POST",
      path: "/nsmf-pdusession/v1/sm-contexts/{smContextRef}/modify",
      body: "smContextUpdateDeactivate",
      expect: [200],
      require: { "/upCnxState": "DEACTIVATED" },
    },
    {
      name: "smf.update-activate",
      title: "SMF: SM context update, user plane activating; N2 in a multipart answer",
      from: "AMF",
      to: "SMF",
      method: "POST",
      path: "/nsmf-pdusession/v1/sm-contexts/{smContextRef}/modify",
      body: "smContextUpdateActivate",
      expect: [200],
      require: { "/upCnxState": "ACTIVATING" },
    },
    N2_SETUP_RESPONSE,
  ],
};

/** The seed study's request: one warm GET of 256 B. */
export const WARM_GET: FlowDefinition = {
  name: "warm-get",
  title: "Warm GET 256 B (the seed study's request)",
  source: "sbilab rtt scenario",
  steps: [{
    name: "nbench.get",
    title: "GET /nbench/v1/payload?size=256 on a warm connection",
    from: "AMF",
    to: "NBENCH",
    method: "GET",
    path: "/nbench/v1/payload?size=256",
    expect: [200],
  }],
};

/** NF registration at the NRF before any flow (TS 29.510 §5.2.2.2). */
export const NF_REGISTER: FlowStep = {
  name: "nrf.register",
  title: "NRF: NF registration (TS 29.510 §5.2.2.2)",
  from: "NRF",
  to: "NRF",
  method: "PUT",
  path: "/nnrf-nfm/v1/nf-instances/{nfInstanceId}",
  body: "nfProfile",
  expect: [201, 200],
};

/** NF heartbeat, sent in the background by every NF (TS 29.510 §5.2.2.3.2). */
export const HEARTBEAT: FlowStep = {
  name: "nrf.heartbeat",
  title: "NRF: NF heartbeat, JSON Patch of nfStatus (TS 29.510 §5.2.2.3.2)",
  from: "NRF",
  to: "NRF",
  method: "PATCH",
  path: "/nnrf-nfm/v1/nf-instances/{nfInstanceId}",
  body: "heartbeat",
  expect: [200, 204],
};

/** A UE's journey: the flows one arriving UE runs, in order. */
export const JOURNEY: FlowDefinition[] = [REGISTRATION, PDU_SESSION, HANDOVER, SERVICE_REQUEST];

/** Every flow by name. */
export const FLOWS: Readonly<Record<string, FlowDefinition>> = {
  registration: REGISTRATION,
  "pdu-session": PDU_SESSION,
  handover: HANDOVER,
  "service-request": SERVICE_REQUEST,
  "warm-get": WARM_GET,
};
