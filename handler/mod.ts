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
  payloadTooLarge,
  PROBLEM_JSON,
  problemDetails,
  ProblemError,
  type ProblemInit,
  problemResponse,
  statusTitle,
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
  mediaType,
  NF_INSTANCES_PATH,
  type NfProfile,
  type NfProfileStore,
  type Nrf,
  type NrfOptions,
  parseJsonBody,
} from "./nrf.ts";
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
