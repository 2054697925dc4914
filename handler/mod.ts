/**
 * The transport-agnostic SBI layer: the message model, the request handler
 * (benchmark routes, an in-memory NRF, ProblemDetails errors) and the pieces it
 * is built from (payload bodies, JSON Patch, multipart). No Deno APIs, no
 * sockets: every transport serves {@link createHandler} and tests call it
 * directly.
 */
export type {
  InvalidParam,
  MultipartPart,
  ProblemDetails,
  SbiHandler,
  SbiHeaders,
  SbiPeer,
  SbiRequest,
  SbiResponse,
} from "./types.ts";
export { REFUSED } from "./types.ts";
export {
  createHandler,
  DEFAULT_MAX_BODY_BYTES,
  type HandlerOptions,
  MAX_RSP_TIME_HEADER,
  PRIORITY_HEADER,
  type Sleep,
  timerSleep,
} from "./handler.ts";
export {
  bodyTooLarge,
  headerSectionTooLarge,
  overloaded,
  PROBLEM_JSON,
  problemDetails,
  ProblemError,
  type ProblemInit,
  problemResponse,
  statusTitle,
  systemFailure,
  tooEarly,
  unreadableRequest,
} from "./problem.ts";
export {
  buildPayload,
  createPayloadCache,
  MAX_PAYLOAD_BYTES,
  type PayloadCache,
  type PayloadCacheOptions,
} from "./payload.ts";
export {
  createMemoryNfProfileStore,
  createNrf,
  DEFAULT_MAX_INSTANCES,
  DEFAULT_MAX_JSON_DEPTH,
  DEFAULT_MAX_PROFILE_BYTES,
  mediaType,
  NF_INSTANCES_PATH,
  type NfProfile,
  type NfProfileStore,
  type Nrf,
  type NrfOptions,
  parseJsonBody,
} from "./nrf.ts";
export { exceedsJsonDepth, jsonValueDepth } from "./json_depth.ts";
export {
  applyJsonPatch,
  jsonEqual,
  JsonPatchConflictError,
  type JsonPatchOperation,
  type JsonValue,
  parsePointer,
  validatePatch,
} from "./json_patch.ts";
export {
  buildMultipart,
  isMultipartRelated,
  multipartBoundary,
  parseMultipart,
} from "./multipart.ts";
export {
  createUeRegistry,
  mockNfRoutes,
  NAS_TYPE,
  NF_APIS,
  NGAP_TYPE,
  simulatedResStar,
  type UeRegistry,
} from "./nf/mod.ts";
