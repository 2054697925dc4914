/**
 * An in-memory NRF (TS 29.510): NF instance registration through
 * `Nnrf_NFManagement` and look-up through `Nnrf_NFDiscovery`.
 */
import { applyJsonPatch, JsonPatchConflictError, type JsonValue } from "./json_patch.ts";
import { exceedsJsonDepth, jsonValueDepth } from "./json_depth.ts";
import { ProblemError } from "./problem.ts";
import { type InvalidParam, REFUSED, type SbiRequest, type SbiResponse } from "./types.ts";

/** An NF profile as registered: any JSON object with at least the mandatory IEs. */
export interface NfProfile {
  /** Instance id, equal to the `{nfInstanceId}` path segment. */
  nfInstanceId: string;
  /** NF type, for example `AMF` or `SMF`. */
  nfType: string;
  /** `REGISTERED`, `SUSPENDED` or `UNDISCOVERABLE`. */
  nfStatus: string;
  /** Any other NFProfile attribute, kept as sent. */
  [attribute: string]: JsonValue;
}

/**
 * Where the NRF keeps profiles. Synchronous so lookups stay cheap. Profiles
 * are values: a store hands back the objects it was given and never changes
 * one in place (the NRF replaces a profile to change it), so an answer built
 * from the same objects is the same answer.
 */
export interface NfProfileStore {
  /** The profile with this id, if registered. */
  get(nfInstanceId: string): NfProfile | undefined;
  /** Registers or replaces a profile. */
  set(nfInstanceId: string, profile: NfProfile): void;
  /** Removes a profile; returns whether one was there. */
  delete(nfInstanceId: string): boolean;
  /** Every registered profile, in any order. */
  list(): NfProfile[];
  /** How many profiles are registered. */
  size(): number;
}

/** Creates a store backed by a `Map`. */
export function createMemoryNfProfileStore(): NfProfileStore {
  const profiles = new Map<string, NfProfile>();
  return {
    get: (id) => profiles.get(id),
    set: (id, profile) => void profiles.set(id, profile),
    delete: (id) => profiles.delete(id),
    list: () => [...profiles.values()],
    size: () => profiles.size,
  };
}

/** Options for {@link createNrf}. */
export interface NrfOptions {
  /** Profile storage. Default a new in-memory store. */
  store?: NfProfileStore;
  /** `validityPeriod` of discovery results, in seconds. Default 3600. */
  validitySeconds?: number;
  /**
   * Prefix for URIs the NRF hands out (`Location`, `_links`), for example
   * `http://127.0.0.1:7777`. Default `""`: path-absolute references.
   */
  apiRoot?: string;
  /** Most NF instances registered at once; one more gets 403. Default {@link DEFAULT_MAX_INSTANCES}. */
  maxInstances?: number;
  /** Largest NFProfile in bytes of JSON, as sent or after a PATCH; larger gets 413. Default {@link DEFAULT_MAX_PROFILE_BYTES}. */
  maxProfileBytes?: number;
  /** Deepest nesting of objects and arrays in a request body or a patched profile; deeper gets 400. Default {@link DEFAULT_MAX_JSON_DEPTH}. */
  maxJsonDepth?: number;
  /** Accept any non-empty `{nfInstanceId}`, not only a UUID (a lab convenience). Default false. */
  anyInstanceId?: boolean;
}

/** Default {@link NrfOptions.maxInstances}. */
export const DEFAULT_MAX_INSTANCES = 4096;
/** Default {@link NrfOptions.maxProfileBytes}: 64 KiB. */
export const DEFAULT_MAX_PROFILE_BYTES = 64 * 1024;
/** Default {@link NrfOptions.maxJsonDepth}. */
export const DEFAULT_MAX_JSON_DEPTH = 32;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The NRF operations, each taking the request and the path's `{nfInstanceId}`. */
export interface Nrf {
  /** `PUT …/nf-instances/{id}`: register (201) or replace (200). */
  register(request: SbiRequest, nfInstanceId: string): SbiResponse;
  /** `GET …/nf-instances/{id}`: 200 with the profile or 404. */
  retrieve(request: SbiRequest, nfInstanceId: string): SbiResponse;
  /** `PATCH …/nf-instances/{id}` with a JSON Patch: 200 with the new profile. */
  update(request: SbiRequest, nfInstanceId: string): SbiResponse;
  /** `DELETE …/nf-instances/{id}`: 204 or 404. */
  deregister(request: SbiRequest, nfInstanceId: string): SbiResponse;
  /** `GET /nnrf-nfm/v1/nf-instances`: the registered instances as a UriList. */
  list(request: SbiRequest): SbiResponse;
  /** `GET /nnrf-disc/v1/nf-instances`: a SearchResult. */
  discover(request: SbiRequest): SbiResponse;
}

/** Path of the NF instances collection. */
export const NF_INSTANCES_PATH = "/nnrf-nfm/v1/nf-instances";

const JSON_TYPE = "application/json";
const HAL_JSON_TYPE = "application/3gppHal+json";
const PATCH_TYPE = "application/json-patch+json";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** The media type of a content-type header, lower case, parameters dropped. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? "").split(";")[0].trim().toLowerCase();
}

function json(status: number, value: unknown, headers: Record<string, string> = {}): SbiResponse {
  return {
    status,
    headers: { ...headers, "content-type": JSON_TYPE },
    body: encoder.encode(JSON.stringify(value)),
  };
}

function requireMediaType(request: SbiRequest, expected: string): void {
  const got = mediaType(request.headers["content-type"]);
  if (got !== expected) {
    throw new ProblemError(415, {
      cause: "UNSUPPORTED_MEDIA_TYPE",
      detail: `Content-Type must be ${expected}`,
      invalidParams: [{ param: "header Content-Type", reason: `expected ${expected}` }],
    });
  }
}

function tooDeep(maxDepth: number, what: string): ProblemError {
  return new ProblemError(400, {
    cause: "INVALID_MSG_FORMAT",
    detail: `${what} nests deeper than ${maxDepth} levels`,
  });
}

/**
 * Parses a JSON body, turning any decoding failure into 400 `INVALID_MSG_FORMAT`.
 * A body nested deeper than `maxDepth` is refused the same way before it is parsed.
 */
export function parseJsonBody(body: Uint8Array, maxDepth = DEFAULT_MAX_JSON_DEPTH): unknown {
  if (exceedsJsonDepth(body, maxDepth)) throw tooDeep(maxDepth, "Body");
  try {
    return JSON.parse(decoder.decode(body));
  } catch (err) {
    if (err instanceof SyntaxError || err instanceof TypeError) {
      throw new ProblemError(400, {
        cause: "INVALID_MSG_FORMAT",
        detail: "Body is not valid JSON",
      });
    }
    throw err;
  }
}

function isObject(value: unknown): value is Record<string, JsonValue> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

const MANDATORY = ["nfInstanceId", "nfType", "nfStatus"] as const;

/** Checks a candidate profile; 400 on missing or wrong mandatory IEs. */
function checkProfile(value: unknown, nfInstanceId: string): NfProfile {
  if (!isObject(value)) {
    throw new ProblemError(400, {
      cause: "INVALID_MSG_FORMAT",
      detail: "NFProfile must be a JSON object",
    });
  }
  const missing: InvalidParam[] = MANDATORY.filter((k) => value[k] === undefined)
    .map((k) => ({ param: `/${k}`, reason: "mandatory IE missing" }));
  if (missing.length > 0) {
    throw new ProblemError(400, {
      cause: "MANDATORY_IE_MISSING",
      detail: "NFProfile lacks mandatory IEs",
      invalidParams: missing,
    });
  }
  const incorrect: InvalidParam[] = MANDATORY
    .filter((k) => typeof value[k] !== "string" || value[k] === "")
    .map((k) => ({ param: `/${k}`, reason: "must be a non-empty string" }));
  if (value.nfInstanceId !== nfInstanceId && incorrect.length === 0) {
    incorrect.push({
      param: "/nfInstanceId",
      reason: "must equal the {nfInstanceId} path segment",
    });
  }
  if (incorrect.length > 0) {
    throw new ProblemError(400, {
      cause: "MANDATORY_IE_INCORRECT",
      detail: "NFProfile has incorrect mandatory IEs",
      invalidParams: incorrect,
    });
  }
  return value as NfProfile;
}

function notFound(nfInstanceId: string, path: string): ProblemError {
  return new ProblemError(404, {
    cause: "RESOURCE_URI_STRUCTURE_NOT_FOUND",
    detail: `NF instance ${nfInstanceId} is not registered`,
    instance: path,
  });
}

function compareIds(a: NfProfile, b: NfProfile): number {
  return a.nfInstanceId < b.nfInstanceId ? -1 : a.nfInstanceId > b.nfInstanceId ? 1 : 0;
}

/** Reads an optional positive-integer query parameter. */
function limitParam(query: URLSearchParams, name: string): number | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  if (!/^[1-9][0-9]{0,8}$/.test(raw)) {
    throw new ProblemError(400, {
      cause: "OPTIONAL_QUERY_PARAM_INCORRECT",
      detail: `Query parameter ${name} must be a positive integer`,
      invalidParams: [{ param: `query ${name}`, reason: "must be a positive integer" }],
    });
  }
  return Number(raw);
}

/** Default `max-payload-size` of a discovery answer, kilo-octets (TS 29.510 §6.2.3.2.3.1). */
export const DEFAULT_MAX_PAYLOAD_KO = 124;
/** Largest `max-payload-size` a discovery request may ask, kilo-octets; more is a 400. */
export const MAX_PAYLOAD_KO_CEILING = 2000;

/**
 * A discovery SearchResult of at most `limit` profiles of `found` (in order)
 * and at most `maxBytes` bytes: profiles that would not fit are dropped whole
 * (TS 29.510 `max-payload-size`), and when any was dropped
 * `numNfInstComplete` says how many were found. Profiles past the cut are
 * never serialised, so the work is bounded by the answer's size too.
 */
function searchResult(
  validityPeriod: number,
  found: NfProfile[],
  limit: number,
  maxBytes: number,
): Uint8Array {
  const head = `{"validityPeriod":${validityPeriod},"nfInstances":[`;
  // room kept for the tail in the worst case: `],"numNfInstComplete":4294967295}`
  const tailRoom = 34;
  let size = head.length + tailRoom;
  const parts: string[] = [];
  for (const p of found) {
    if (parts.length >= limit) break;
    const one = JSON.stringify(p);
    // Characters past ASCII count by their UTF-8 bytes.
    const bytes = /[^\u0020-\u007e]/.test(one) ? encoder.encode(one).length : one.length;
    const sep = parts.length > 0 ? 1 : 0;
    if (size + sep + bytes > maxBytes) break;
    size += sep + bytes;
    parts.push(one);
  }
  const complete = parts.length === found.length;
  const tail = complete ? "]}" : `],"numNfInstComplete":${found.length}}`;
  return encoder.encode(head + parts.join(",") + tail);
}

/** How many recent discovery answers are kept for reuse. */
const ANSWERS_KEPT = 4;

/**
 * The last few discovery answers, each with the query bounds and the very
 * profile objects it was built from: while the same profiles answer the same
 * query the answer's bytes are reused, not built again (a discovery flood
 * then costs no garbage). Any registration, update or removal replaces a
 * profile object, so a changed store never matches.
 */
class DiscoveryAnswers {
  #kept: { key: string; found: NfProfile[]; body: Uint8Array }[] = [];

  /** The answer's body, built by `build` unless one kept matches. */
  body(key: string, found: NfProfile[], build: () => Uint8Array): Uint8Array {
    const i = this.#kept.findIndex((e) =>
      e.key === key && e.found.length === found.length && e.found.every((p, j) => p === found[j])
    );
    const hit = i >= 0 ? this.#kept.splice(i, 1)[0] : { key, found, body: build() };
    this.#kept.unshift(hit);
    this.#kept.length = Math.min(this.#kept.length, ANSWERS_KEPT);
    return hit.body;
  }
}

function instanceHref(apiRoot: string, nfInstanceId: string): string {
  return `${apiRoot}${NF_INSTANCES_PATH}/${encodeURIComponent(nfInstanceId)}`;
}

/** Throws the 400 for an nfInstanceId that is not a UUID. */
function checkUuid(nfInstanceId: string): void {
  if (!UUID.test(nfInstanceId)) {
    throw new ProblemError(400, {
      cause: "MANDATORY_IE_INCORRECT",
      detail: "nfInstanceId must be a UUID",
      invalidParams: [{ param: "{nfInstanceId}", reason: "must be a UUID" }],
    });
  }
}

/** Applies a JSON Patch to a profile: 400 for a malformed patch, 409 for one that does not apply. */
function patchProfile(current: JsonValue, patch: unknown): JsonValue {
  try {
    return applyJsonPatch(current, patch);
  } catch (err) {
    if (err instanceof SyntaxError) {
      throw new ProblemError(400, { cause: "INVALID_MSG_FORMAT", detail: err.message });
    }
    if (err instanceof JsonPatchConflictError) {
      throw new ProblemError(409, {
        cause: "UNSPECIFIED_MSG_FAILURE",
        detail: "JSON Patch cannot be applied to the NFProfile",
        invalidParams: [{ param: err.path, reason: err.message }],
      });
    }
    throw err;
  }
}

/** A discovery's query: both NF types (mandatory), the limit and the answer's bound in kilo-octets. */
interface DiscoveryQuery {
  target: string;
  requester: string;
  limit: number | undefined;
  maxKo: number;
}

/** Reads and checks a discovery's query; throws the 400 that names what is missing or wrong. */
function discoveryQuery(query: URLSearchParams): DiscoveryQuery {
  const target = query.get("target-nf-type");
  const requester = query.get("requester-nf-type");
  const missing = [
    ["target-nf-type", target],
    ["requester-nf-type", requester],
  ].filter(([, v]) => v === null || v === "").map(([name]) => ({
    param: `query ${name}`,
    reason: "mandatory query parameter missing",
  }));
  if (missing.length > 0) {
    throw new ProblemError(400, {
      cause: "MANDATORY_QUERY_PARAM_MISSING",
      detail: "Discovery needs target-nf-type and requester-nf-type",
      invalidParams: missing,
    });
  }
  const limit = limitParam(query, "limit");
  const maxKo = limitParam(query, "max-payload-size") ?? DEFAULT_MAX_PAYLOAD_KO;
  if (maxKo > MAX_PAYLOAD_KO_CEILING) {
    throw new ProblemError(400, {
      cause: "OPTIONAL_QUERY_PARAM_INCORRECT",
      detail: `Query parameter max-payload-size must be at most ${MAX_PAYLOAD_KO_CEILING}`,
      invalidParams: [{
        param: "query max-payload-size",
        reason: `at most ${MAX_PAYLOAD_KO_CEILING} kilo-octets`,
      }],
    });
  }
  return { target: target as string, requester: requester as string, limit, maxKo };
}

/** Creates an NRF over a store. */
export function createNrf(options: NrfOptions = {}): Nrf {
  const store = options.store ?? createMemoryNfProfileStore();
  const validityPeriod = options.validitySeconds ?? 3600;
  const apiRoot = options.apiRoot ?? "";
  const maxInstances = options.maxInstances ?? DEFAULT_MAX_INSTANCES;
  const maxProfileBytes = options.maxProfileBytes ?? DEFAULT_MAX_PROFILE_BYTES;
  const maxDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const anyInstanceId = options.anyInstanceId ?? false;
  const answers = new DiscoveryAnswers();

  function checkSize(bytes: number): void {
    if (bytes > maxProfileBytes) {
      throw new ProblemError(413, {
        cause: "PAYLOAD_TOO_LARGE",
        detail: `NFProfile exceeds ${maxProfileBytes} bytes`,
      });
    }
  }

  return {
    register(request, nfInstanceId) {
      requireMediaType(request, JSON_TYPE);
      if (!anyInstanceId) checkUuid(nfInstanceId);
      checkSize(request.body.length);
      const profile = checkProfile(parseJsonBody(request.body, maxDepth), nfInstanceId);
      const existed = store.get(nfInstanceId) !== undefined;
      if (!existed && store.size() >= maxInstances) {
        throw new ProblemError(403, {
          cause: "INSUFFICIENT_RESOURCES",
          detail: `The NRF holds its maximum of ${maxInstances} NF instances`,
        });
      }
      store.set(nfInstanceId, profile);
      if (existed) return json(200, profile);
      return json(201, profile, { location: instanceHref(apiRoot, nfInstanceId) });
    },

    retrieve(request, nfInstanceId) {
      const profile = store.get(nfInstanceId);
      if (profile === undefined) throw notFound(nfInstanceId, request.path);
      return json(200, profile);
    },

    update(request, nfInstanceId) {
      requireMediaType(request, PATCH_TYPE);
      const current = store.get(nfInstanceId);
      if (current === undefined) throw notFound(nfInstanceId, request.path);
      const patch = parseJsonBody(request.body, maxDepth);
      const patched = patchProfile(current, patch);
      if (isObject(patched) && patched.nfInstanceId !== nfInstanceId) {
        throw new ProblemError(403, {
          cause: "MODIFICATION_NOT_ALLOWED",
          detail: "nfInstanceId cannot be modified",
          invalidParams: [{ param: "/nfInstanceId", reason: "cannot be modified" }],
        });
      }
      if (jsonValueDepth(patched) > maxDepth) throw tooDeep(maxDepth, "The patched NFProfile");
      const profile = checkProfile(patched, nfInstanceId);
      const response = json(200, profile);
      checkSize(response.body.length);
      store.set(nfInstanceId, profile);
      return response;
    },

    deregister(request, nfInstanceId) {
      if (!store.delete(nfInstanceId)) throw notFound(nfInstanceId, request.path);
      return { status: 204, headers: {}, body: new Uint8Array(0) };
    },

    list(request) {
      const nfType = request.query.get("nf-type");
      const limit = limitParam(request.query, "limit");
      const all = store.list().filter((p) => nfType === null || p.nfType === nfType);
      all.sort(compareIds);
      const items = all.slice(0, limit).map((p) => ({
        href: instanceHref(apiRoot, p.nfInstanceId),
      }));
      const self = `${apiRoot}${request.path}${request.query.size > 0 ? `?${request.query}` : ""}`;
      return {
        status: 200,
        headers: { "content-type": HAL_JSON_TYPE },
        body: encoder.encode(JSON.stringify({
          _links: { self: { href: self }, items },
          totalItemCount: all.length,
        })),
      };
    },

    discover(request) {
      const { target, requester, limit, maxKo } = discoveryQuery(request.query);
      // Room first: the answer's bound is reserved before it is built (released with it).
      if (request.reserve && !request.reserve(maxKo * 1000)) return REFUSED;
      const found = store.list().filter((p) =>
        p.nfType === target && p.nfStatus === "REGISTERED" &&
        (!Array.isArray(p.allowedNfTypes) || p.allowedNfTypes.includes(requester))
      );
      found.sort(compareIds);
      const most = limit ?? found.length;
      const body = answers.body(
        `${most}/${maxKo}`,
        found,
        () => searchResult(validityPeriod, found, most, maxKo * 1000),
      );
      return { status: 200, headers: { "content-type": JSON_TYPE }, body };
    },
  };
}
