/**
 * The one SBI request handler every transport serves: benchmark routes, an
 * in-memory NRF, mock AUSF/UDM/PCF/SMF/AMF (`nf/`), ProblemDetails errors,
 * message priority and max response time.
 */
import { isMultipartRelated, parseMultipart } from "./multipart.ts";
import { createNrf, type NfProfileStore, type Nrf, type NrfOptions } from "./nrf.ts";
import { createPayloadCache, MAX_PAYLOAD_BYTES, type PayloadCache } from "./payload.ts";
import { bodyTooLarge, ProblemError, problemResponse, systemFailure } from "./problem.ts";
import { REFUSED, type SbiHandler, type SbiRequest, type SbiResponse } from "./types.ts";
import { createUeRegistry, mockNfRoutes, NF_APIS } from "./nf/mod.ts";

/** Default request body limit: the largest payload plus 64 KiB for framing and multipart. */
export const DEFAULT_MAX_BODY_BYTES = MAX_PAYLOAD_BYTES + 64 * 1024;

/** Header carrying the message priority (TS 29.500 §5.2.3.2.2), echoed on every response. */
export const PRIORITY_HEADER = "3gpp-sbi-message-priority";
/** Header carrying the maximum response time in ms (TS 29.500 §5.2.3.3.x). */
export const MAX_RSP_TIME_HEADER = "3gpp-sbi-max-rsp-time";

/** Waits `ms` milliseconds; rejects when `signal` aborts. */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

/** Options for {@link createHandler}. */
export interface HandlerOptions {
  /** Largest request body accepted; larger ones get 413. Default {@link DEFAULT_MAX_BODY_BYTES}. */
  maxBodyBytes?: number;
  /** Clock in ms since the epoch, read at arrival and before answering. Default `Date.now`. */
  now?: () => number;
  /** Waits for the injected delay and the max-response-time deadline. Default a `setTimeout` wait. */
  sleep?: Sleep;
  /** Fixed delay in ms before answering every `/nbench/` request. Default 0. */
  delayMs?: number;
  /**
   * Called with the exception when a route throws; the client gets a 500
   * `SYSTEM_FAILURE` without details. The handler never logs. Default no-op.
   */
  onError?: (err: unknown, request: SbiRequest) => void;
  /** `validityPeriod` of NRF discovery results, in seconds. Default 3600. */
  validitySeconds?: number;
  /** NRF profile storage. Default a new in-memory store per handler. */
  store?: NfProfileStore;
  /** Prefix of URIs the NRF hands out (`Location`, `_links`). Default `""` (path only). */
  apiRoot?: string;
  /** Bytes of payload bodies kept in the size cache. Default 64 MiB. */
  payloadCacheBytes?: number;
  /** NRF bounds and id rule (instances, profile size, JSON depth, UUID ids); see {@link NrfOptions}. Default the NRF's defaults. */
  nrf?: Omit<NrfOptions, "store" | "validitySeconds" | "apiRoot">;
  /** New resource ids of the mock NFs (authCtxId, smContextRef, …). Default `crypto.randomUUID`. */
  newId?: () => string;
  /** Entries the mock NFs keep per table (UEs, contexts) before forgetting the oldest. Default 100000. */
  maxUeEntries?: number;
}

/** Default {@link Sleep}: a timer cleared when the signal aborts. */
export const timerSleep: Sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(id);
      reject(signal.reason);
    };
    const id = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });

type RouteFn = (
  request: SbiRequest,
  params: Record<string, string>,
) => Promise<SbiResponse> | SbiResponse;

interface Route {
  /** Path segments; `{name}` matches one segment. */
  segments: string[];
  /** Handlers by upper-case method. */
  methods: Record<string, RouteFn>;
}

/** First path segment of each API the handler serves, with its version. */
const APIS: Readonly<Record<string, string>> = {
  "nbench": "v1",
  "nnrf-nfm": "v1",
  "nnrf-disc": "v1",
  ...NF_APIS,
};

function route(path: string, methods: Record<string, RouteFn>): Route {
  return { segments: path.split("/").slice(1), methods };
}

function match(route: Route, segments: string[]): Record<string, string> | undefined {
  if (route.segments.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const want = route.segments[i];
    if (want.startsWith("{")) {
      if (segments[i] === "") return undefined;
      params[want.slice(1, -1)] = segments[i];
    } else if (want !== segments[i]) return undefined;
  }
  return params;
}

function pathParam(params: Record<string, string>, name: string): string {
  try {
    return decodeURIComponent(params[name]);
  } catch {
    throw new ProblemError(400, {
      cause: "INVALID_MSG_FORMAT",
      detail: `Path segment {${name}} is not valid percent-encoding`,
      invalidParams: [{ param: `{${name}}`, reason: "invalid percent-encoding" }],
    });
  }
}

function decodeParams(params: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(params)) out[name] = pathParam(params, name);
  return out;
}

function parseSize(query: URLSearchParams): number {
  const raw = query.get("size");
  if (raw === null) {
    throw new ProblemError(400, {
      cause: "MANDATORY_QUERY_PARAM_MISSING",
      detail: "Query parameter size is required",
      invalidParams: [{ param: "query size", reason: "mandatory query parameter missing" }],
    });
  }
  const size = /^[0-9]{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!(size >= 1 && size <= MAX_PAYLOAD_BYTES)) {
    throw new ProblemError(400, {
      cause: "MANDATORY_QUERY_PARAM_INCORRECT",
      detail: `Query parameter size must be an integer from 1 to ${MAX_PAYLOAD_BYTES}`,
      invalidParams: [{
        param: "query size",
        reason: `must be an integer from 1 to ${MAX_PAYLOAD_BYTES}`,
      }],
    });
  }
  return size;
}

/** Parses the max response time header; undefined when absent. */
function maxRspTime(request: SbiRequest): number | undefined {
  const raw = request.headers[MAX_RSP_TIME_HEADER];
  if (raw === undefined) return undefined;
  if (!/^[0-9]{1,9}$/.test(raw.trim())) {
    throw new ProblemError(400, {
      cause: "INVALID_MSG_FORMAT",
      detail: "3gpp-Sbi-Max-Rsp-Time must be a non-negative integer of milliseconds",
      invalidParams: [{ param: "header 3gpp-Sbi-Max-Rsp-Time", reason: "must be an integer" }],
    });
  }
  return Number(raw.trim());
}

function timedOut(maxMs: number): SbiResponse {
  return problemResponse(504, {
    cause: "TIMED_OUT_REQUEST",
    detail: `No response within 3gpp-Sbi-Max-Rsp-Time of ${maxMs} ms`,
  });
}

const TIMEOUT = Symbol("timeout");

/** The route table: the benchmark routes, the NRF's and the mock NFs'. */
function buildRoutes(options: HandlerOptions, payloads: PayloadCache, nrf: Nrf): Route[] {
  return [
    route("/nbench/v1/payload", {
      GET: (req) => {
        const size = parseSize(req.query);
        // Room first: a body the server cannot hold is never built.
        if (req.reserve && !req.reserve(size)) return REFUSED;
        return {
          status: 200,
          headers: { "content-type": "application/json" },
          body: payloads.get(size),
        };
      },
    }),
    route("/nbench/v1/echo", {
      POST: (req) => ({
        status: 200,
        headers: { "content-type": req.headers["content-type"] ?? "application/octet-stream" },
        body: req.body,
      }),
    }),
    route("/nnrf-nfm/v1/nf-instances", { GET: (req) => nrf.list(req) }),
    route("/nnrf-nfm/v1/nf-instances/{nfInstanceId}", {
      GET: (req, p) => nrf.retrieve(req, pathParam(p, "nfInstanceId")),
      PUT: (req, p) => nrf.register(req, pathParam(p, "nfInstanceId")),
      PATCH: (req, p) => nrf.update(req, pathParam(p, "nfInstanceId")),
      DELETE: (req, p) => nrf.deregister(req, pathParam(p, "nfInstanceId")),
    }),
    route("/nnrf-disc/v1/nf-instances", { GET: (req) => nrf.discover(req) }),
    ...mockNfRoutes({
      newId: options.newId ?? (() => crypto.randomUUID()),
      apiRoot: options.apiRoot ?? "",
      ues: createUeRegistry({ maxEntries: options.maxUeEntries }),
    }).map((r) =>
      route(
        r.path,
        Object.fromEntries(
          Object.entries(r.methods).map(([m, fn]) => [m, (req: SbiRequest, p) =>
            fn(req, decodeParams(p))]
          ),
        ),
      )
    ),
  ];
}

/**
 * The route function for a request's path and method, with its path
 * parameters; throws the ProblemError for a wrong API version (400), an
 * unknown path (404) or a method the path does not serve (405).
 */
function findRoute(
  routes: readonly Route[],
  request: SbiRequest,
  segments: string[],
): { fn: RouteFn; params: Record<string, string> } {
  const version = APIS[segments[0]];
  if (version !== undefined && segments[1] !== version) {
    throw new ProblemError(400, {
      cause: "INVALID_API",
      detail: `API ${segments[0]} is served in version ${version} only`,
    });
  }
  let found: { route: Route; params: Record<string, string> } | undefined;
  for (const candidate of routes) {
    const params = match(candidate, segments);
    if (params !== undefined) {
      found = { route: candidate, params };
      break;
    }
  }
  if (found === undefined) {
    throw new ProblemError(404, {
      cause: "RESOURCE_URI_STRUCTURE_NOT_FOUND",
      detail: "No resource at this URI",
      instance: request.path,
    });
  }
  const fn = found.route.methods[request.method];
  if (fn === undefined) {
    const allow = Object.keys(found.route.methods).sort().join(", ");
    throw new ProblemError(405, {
      cause: "METHOD_NOT_ALLOWED",
      detail: `Method ${request.method} is not allowed; use ${allow}`,
      headers: { allow },
    });
  }
  return { fn, params: found.params };
}

/** The request with its multipart parts parsed, if it is multipart/related; 400 if they do not parse. */
function withParts(request: SbiRequest): SbiRequest {
  if (request.parts !== undefined || !isMultipartRelated(request.headers["content-type"])) {
    return request;
  }
  try {
    return { ...request, parts: parseMultipart(request.body, request.headers["content-type"]) };
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    throw new ProblemError(400, {
      cause: "INVALID_MSG_FORMAT",
      detail: `Invalid multipart body: ${err.message}`,
    });
  }
}

/**
 * Creates the SBI handler. It keeps its NRF state and payload cache for its
 * lifetime; it never touches sockets, files or the console.
 */
export function createHandler(options: HandlerOptions = {}): SbiHandler {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? timerSleep;
  const delayMs = options.delayMs ?? 0;
  const onError = options.onError ?? (() => {});
  const payloads = createPayloadCache({ maxBytes: options.payloadCacheBytes });
  const nrf = createNrf({
    ...options.nrf,
    store: options.store,
    validitySeconds: options.validitySeconds,
    apiRoot: options.apiRoot,
  });
  const routes = buildRoutes(options, payloads, nrf);

  /**
   * Finds the route and runs it; route problems are thrown as ProblemError.
   * Synchronous unless a delay applies or the route itself is asynchronous, so
   * the common case needs no timer at all.
   */
  function dispatch(
    request: SbiRequest,
    signal: AbortSignal,
  ): SbiResponse | Promise<SbiResponse> {
    if (request.body.length > maxBodyBytes) return bodyTooLarge(maxBodyBytes);
    const segments = request.path.split("/").slice(1);
    const { fn, params } = findRoute(routes, request, segments);
    const req = withParts(request);
    if (delayMs > 0 && segments[0] === "nbench") {
      return sleep(delayMs, signal).then(() => fn(req, params));
    }
    return fn(req, params);
  }

  /** Maps an exception from a route to its response. */
  function recover(err: unknown, request: SbiRequest, signal: AbortSignal): SbiResponse {
    if (err instanceof ProblemError) return err.toResponse();
    if (signal.aborted) return problemResponse(504, { cause: "TIMED_OUT_REQUEST" });
    try {
      onError(err, request);
    } catch {
      // A failing error hook must not turn a 500 into a dropped request.
    }
    return systemFailure();
  }

  /** Runs dispatch and maps every exception to a response; never throws or rejects. */
  function answer(request: SbiRequest, signal: AbortSignal): SbiResponse | Promise<SbiResponse> {
    try {
      const result = dispatch(request, signal);
      if (result instanceof Promise) return result.catch((err) => recover(err, request, signal));
      return result;
    } catch (err) {
      return recover(err, request, signal);
    }
  }

  return async function handle(request: SbiRequest): Promise<SbiResponse> {
    const arrival = now();
    let response: SbiResponse;
    let maxMs: number | undefined;
    try {
      maxMs = maxRspTime(request);
    } catch (err) {
      if (!(err instanceof ProblemError)) throw err;
      return withPriority(err.toResponse(), request);
    }
    const controller = new AbortController();
    const answered = answer(request, controller.signal);
    if (!(answered instanceof Promise)) {
      // Answered synchronously: only the clock can say it came too late.
      response = maxMs !== undefined && now() - arrival > maxMs ? timedOut(maxMs) : answered;
    } else if (maxMs === undefined) {
      response = await answered;
    } else {
      // A sleep that rejects (aborted once the answer won) must not decide the race.
      const deadline = sleep(maxMs, controller.signal).then(
        () => TIMEOUT,
        () => new Promise<never>(() => {}),
      );
      const first = await Promise.race([answered, deadline]);
      controller.abort();
      if (typeof first === "symbol" || now() - arrival > maxMs) {
        response = timedOut(maxMs);
      } else {
        response = first;
      }
    }
    return withPriority(response, request);
  };
}

function withPriority(response: SbiResponse, request: SbiRequest): SbiResponse {
  const priority = request.headers[PRIORITY_HEADER];
  if (priority === undefined) return response;
  return { ...response, headers: { ...response.headers, [PRIORITY_HEADER]: priority } };
}
