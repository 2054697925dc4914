/**
 * Why `lab request` failed, in curl's terms: `main.ts` maps each kind to
 * curl's exit status for the same failure (6, 7, 28, 35, 60, 22).
 */
import { TimeoutError } from "../transports/types.ts";

/** The failures `lab request` tells apart, as curl does. */
export type RequestFailureKind =
  /** The host name did not resolve (curl 6). */
  | "resolve"
  /** Nothing accepted the connection (curl 7). */
  | "connect"
  /** The request or `--max-time` ran out (curl 28). */
  | "timeout"
  /** The TLS handshake failed for another reason than the certificate (curl 35). */
  | "tls"
  /** The server's certificate was not verified (curl 60). */
  | "certificate"
  /** `-f` and an HTTP status of 400 or more (curl 22). */
  | "http"
  /** The URL is malformed or has an unsupported scheme (curl 3). */
  | "url"
  /** Anything else (exit 1). */
  | "other";

/** A failed `lab request`; `main.ts` turns `kind` into the exit status. */
export class RequestError extends Error {
  /** What failed. */
  readonly kind: RequestFailureKind;
  /** `-s` without `-S`: main.ts prints no message. */
  readonly silent: boolean;

  constructor(
    kind: RequestFailureKind,
    message: string,
    options?: ErrorOptions & { silent?: boolean },
  ) {
    super(message, options);
    this.name = "RequestError";
    this.kind = kind;
    this.silent = options?.silent ?? false;
  }
}

function chain(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e = err; e !== undefined && e !== null && out.length < 8; e = (e as Error).cause) {
    out.push(e);
  }
  return out;
}

const RULES: [RequestFailureKind, RegExp][] = [
  ["resolve", /cannot resolve|failed to lookup address|name or service not known|dns error/i],
  ["connect", /connection refused|nothing listens|os error 111/i],
  [
    "certificate",
    /certificate is not trusted|invalid peer certificate|certificate verif|UnknownIssuer|NotValidForName|certificate has expired|issuer is unknown/i,
  ],
  ["tls", /TLS|handshake|corrupt message|cryptographic/i],
];

/**
 * The kind of a client's failure, read from its class and its cause chain's
 * messages (each stack words them its own way); undefined when none fits.
 */
export function requestFailureKind(err: unknown): RequestFailureKind | undefined {
  const errors = chain(err);
  if (errors.some((e) => e instanceof TimeoutError)) return "timeout";
  if (errors.some((e) => e instanceof Deno.errors.ConnectionRefused)) return "connect";
  const text = errors.map((e) => e instanceof Error ? e.message : String(e)).join("\n");
  for (const [kind, re] of RULES) if (re.test(text)) return kind;
  return undefined;
}
