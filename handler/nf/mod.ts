/**
 * Mock 5G core NFs served by the handler beside the NRF: AUSF, UDM, PCF, SMF
 * and AMF, with bodies shaped after the TS 29.5xx data types and a shared
 * subscriber registry that refuses steps out of TS 23.502 order.
 */
import type { NfContext, NfRoute } from "./_shared.ts";
import { ausfRoutes } from "./ausf.ts";
import { udmRoutes } from "./udm.ts";
import { pcfRoutes } from "./pcf.ts";
import { smfRoutes } from "./smf.ts";
import { amfRoutes } from "./amf.ts";

export type { NfContext, NfRoute, NfRouteFn } from "./_shared.ts";
export { hexDigest, NAS_TYPE, NGAP_TYPE, supiOf } from "./_shared.ts";
export { AUSF_API, simulatedResStar } from "./ausf.ts";
export { SDM_API, UECM_API } from "./udm.ts";
export { AM_POLICY_API, SM_POLICY_API } from "./pcf.ts";
export {
  EPD_5GSM,
  MSG_PDU_SESSION_ESTABLISHMENT_ACCEPT,
  MSG_PDU_SESSION_ESTABLISHMENT_REQUEST,
  n2SmBytes,
  SMF_API,
} from "./smf.ts";
export { AMF_API } from "./amf.ts";
export {
  BoundedMap,
  createUeRegistry,
  type UeRegistry,
  type UeRegistryOptions,
} from "./ue_registry.ts";

/** First path segment and version of every mock NF API. */
export const NF_APIS: Readonly<Record<string, string>> = {
  "nausf-auth": "v1",
  "nudm-uecm": "v1",
  "nudm-sdm": "v2",
  "npcf-am-policy-control": "v1",
  "npcf-smpolicycontrol": "v1",
  "nsmf-pdusession": "v1",
  "namf-comm": "v1",
};

/** Every route of every mock NF. */
export function mockNfRoutes(ctx: NfContext): NfRoute[] {
  return [
    ...ausfRoutes(ctx),
    ...udmRoutes(ctx),
    ...pcfRoutes(ctx),
    ...smfRoutes(ctx),
    ...amfRoutes(ctx),
  ];
}
