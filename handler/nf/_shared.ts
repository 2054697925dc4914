/**
 * What the mock NFs share: their route shape, the context the handler hands
 * them, and small helpers for JSON and multipart bodies. Private to `nf/`.
 */
import { mediaType, parseJsonBody } from "../nrf.ts";
import { ProblemError } from "../problem.ts";
import { buildMultipart } from "../multipart.ts";
import type { InvalidParam, MultipartPart, SbiRequest, SbiResponse } from "../types.ts";
import type { UeRegistry } from "./ue_registry.ts";

/** A route function: the request and its decoded `{name}` path parameters. */
export type NfRouteFn = (
  request: SbiRequest,
  params: Record<string, string>,
) => SbiResponse | Promise<SbiResponse>;

/** One resource of a mock NF: a path template and its methods. */
export interface NfRoute {
  /** Path with `{name}` segments, for example `/nausf-auth/v1/ue-authentications`. */
  path: string;
  /** Route functions by upper-case method. */
  methods: Record<string, NfRouteFn>;
}

/** What every mock NF gets from the handler. */
export interface NfContext {
  /** New resource ids (authCtxId, smContextRef, …). */
  newId: () => string;
  /** Prefix of the URIs handed out in `Location` and `_links`. */
  apiRoot: string;
  /** The subscribers and their state, shared by every NF. */
  ues: UeRegistry;
}

const encoder = new TextEncoder();
const JSON_TYPE = "application/json";

/** A JSON response with optional extra headers. */
export function jsonResponse(
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): SbiResponse {
  return {
    status,
    headers: { ...headers, "content-type": JSON_TYPE },
    body: encoder.encode(JSON.stringify(value)),
  };
}

/** A `multipart/related` response: a JSON part followed by binary parts. */
export function multipartResponse(
  status: number,
  value: unknown,
  binaries: { contentId: string; contentType: string; body: Uint8Array }[],
): SbiResponse {
  const boundary = "sbilab-nf-part";
  const parts: MultipartPart[] = [
    { headers: { "Content-Type": JSON_TYPE }, body: encoder.encode(JSON.stringify(value)) },
    ...binaries.map((b) => ({
      headers: { "Content-Type": b.contentType, "Content-Id": b.contentId },
      body: b.body,
    })),
  ];
  return {
    status,
    headers: { "content-type": `multipart/related; boundary=${boundary}` },
    body: buildMultipart(parts, boundary),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Checks that a parsed body is an object carrying every mandatory IE. */
export function requireIes(value: unknown, what: string, mandatory: string[]): Record<
  string,
  unknown
> {
  if (!isObject(value)) {
    throw new ProblemError(400, {
      cause: "INVALID_MSG_FORMAT",
      detail: `${what} must be a JSON object`,
    });
  }
  const missing: InvalidParam[] = mandatory.filter((k) => value[k] === undefined)
    .map((k) => ({ param: `/${k}`, reason: "mandatory IE missing" }));
  if (missing.length > 0) {
    throw new ProblemError(400, {
      cause: "MANDATORY_IE_MISSING",
      detail: `${what} lacks mandatory IEs`,
      invalidParams: missing,
    });
  }
  return value;
}

function unsupported(expected: string): ProblemError {
  return new ProblemError(415, {
    cause: "UNSUPPORTED_MEDIA_TYPE",
    detail: `Content-Type must be ${expected}`,
    invalidParams: [{ param: "header Content-Type", reason: `expected ${expected}` }],
  });
}

/** Parses an `application/json` request body as `what` with its mandatory IEs. */
export function jsonBody(
  request: SbiRequest,
  what: string,
  mandatory: string[],
): Record<string, unknown> {
  if (mediaType(request.headers["content-type"]) !== JSON_TYPE) throw unsupported(JSON_TYPE);
  return requireIes(parseJsonBody(request.body), what, mandatory);
}

/** A JSON body with the binary parts it references by `contentId`. */
export interface JsonWithParts {
  /** The JSON root part. */
  json: Record<string, unknown>;
  /** Binary parts by their `Content-Id` (without angle brackets). */
  binaries: Map<string, MultipartPart>;
}

/**
 * Reads a body that is either `application/json` or `multipart/related` with
 * the JSON first and binary parts after it (TS 29.500 §6.1.2), checking the
 * mandatory IEs of the JSON.
 */
export function jsonWithParts(
  request: SbiRequest,
  what: string,
  mandatory: string[],
): JsonWithParts {
  if (request.parts === undefined) {
    return { json: jsonBody(request, what, mandatory), binaries: new Map() };
  }
  const [root, ...rest] = request.parts;
  if (mediaType(root.headers["content-type"]) !== JSON_TYPE) {
    throw new ProblemError(400, {
      cause: "INVALID_MSG_FORMAT",
      detail: "The first part of a multipart body must be application/json",
    });
  }
  const json = requireIes(parseJsonBody(root.body), what, mandatory);
  const binaries = new Map<string, MultipartPart>();
  for (const part of rest) {
    const id = (part.headers["content-id"] ?? "").replace(/^<|>$/g, "");
    if (id !== "") binaries.set(id, part);
  }
  return { json, binaries };
}

/**
 * The binary part a `RefToBinaryData` (`{ contentId }`) at `pointer` names,
 * with the media type it must have; 400 when the reference or the part is missing.
 */
export function referencedPart(
  body: JsonWithParts,
  ref: unknown,
  pointer: string,
  contentType: string,
): MultipartPart {
  const id = isObject(ref) && typeof ref.contentId === "string" ? ref.contentId : undefined;
  if (id === undefined) {
    throw new ProblemError(400, {
      cause: "MANDATORY_IE_MISSING",
      detail: `${pointer} must be a RefToBinaryData with a contentId`,
      invalidParams: [{ param: pointer, reason: "mandatory IE missing" }],
    });
  }
  const part = body.binaries.get(id);
  if (part === undefined || mediaType(part.headers["content-type"]) !== contentType) {
    throw new ProblemError(400, {
      cause: "MANDATORY_IE_INCORRECT",
      detail: `${pointer} names part ${id}, which is not a ${contentType} part of the body`,
      invalidParams: [{ param: pointer, reason: `no ${contentType} part with that Content-Id` }],
    });
  }
  return part;
}

/** 404 for a resource id the NF does not hold. */
export function contextNotFound(what: string, id: string, path: string): ProblemError {
  return new ProblemError(404, {
    cause: "CONTEXT_NOT_FOUND",
    detail: `${what} ${id} does not exist`,
    instance: path,
  });
}

/** The value at `key` as a string, or 400 naming the IE. */
export function stringIe(value: Record<string, unknown>, key: string): string {
  const v = value[key];
  if (typeof v !== "string" || v === "") {
    throw new ProblemError(400, {
      cause: "MANDATORY_IE_INCORRECT",
      detail: `${key} must be a non-empty string`,
      invalidParams: [{ param: `/${key}`, reason: "must be a non-empty string" }],
    });
  }
  return v;
}

/** The value at `key` as an integer in [min, max], or 400 naming the IE. */
export function integerIe(
  value: Record<string, unknown>,
  key: string,
  min: number,
  max: number,
): number {
  const v = value[key];
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new ProblemError(400, {
      cause: "MANDATORY_IE_INCORRECT",
      detail: `${key} must be an integer from ${min} to ${max}`,
      invalidParams: [{ param: `/${key}`, reason: `must be an integer from ${min} to ${max}` }],
    });
  }
  return v;
}

/** Media type of NAS messages in multipart bodies (TS 29.502 §6.1.6.4). */
export const NAS_TYPE = "application/vnd.3gpp.5gnas";
/** Media type of NGAP IEs in multipart bodies (TS 29.502 §6.1.6.4). */
export const NGAP_TYPE = "application/vnd.3gpp.ngap";

/**
 * `bytes` bytes of a deterministic digest of `text` as lower-case hex (FNV-1a
 * chains): stands in for key material, so equal inputs give equal bodies.
 */
export function hexDigest(text: string, bytes: number): string {
  let out = "";
  let h = 0x811c9dc5;
  for (let round = 0; out.length < bytes * 2; round++) {
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    h ^= round;
    h = Math.imul(h, 0x01000193) >>> 0;
    out += h.toString(16).padStart(8, "0");
  }
  return out.slice(0, bytes * 2);
}

/**
 * The SUPI of a `supiOrSuci`: an `imsi-` SUPI as it is, or a null-scheme SUCI
 * (`suci-0-<mcc>-<mnc>-<routing>-0-0-<msin>`, TS 23.003 §2.2B) turned into its
 * SUPI; undefined for anything else.
 */
export function supiOf(supiOrSuci: string): string | undefined {
  if (/^imsi-[0-9]{5,15}$/.test(supiOrSuci)) return supiOrSuci;
  const m = /^suci-0-([0-9]{3})-([0-9]{2,3})-[0-9]{1,4}-0-0-([0-9]{1,10})$/.exec(supiOrSuci);
  return m ? `imsi-${m[1]}${m[2]}${m[3]}` : undefined;
}
