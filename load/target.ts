/**
 * The part of a load plan that names the target: from a URL to the engine's
 * address, server name and request header block (with the SBI headers a real
 * client sends, computed once for the whole run).
 */
import { parseOrigin } from "../transports/origin.ts";
import { sbiRequestHeaders } from "../transports/sbi_headers.ts";
import type { HeaderList } from "../transports/native/wire.ts";
import type { LoadPlan } from "./plan.ts";

/** Options for {@linkcode loadTarget}. */
export interface TargetOptions {
  /** Use HTTP/3 (needs https://). Default false. */
  h3?: boolean;
  /** Request method. Default GET, or POST with a body. */
  method?: string;
  /** Extra request headers. Default none. */
  headers?: Record<string, string>;
  /** Request body. Default none. */
  body?: Uint8Array;
  /** NF type in User-Agent. Default SMF. */
  nfType?: string;
  /** Per-request timeout in ms, also sent as 3gpp-Sbi-Max-Rsp-Time. Default 10000. */
  timeoutMs?: number;
}

/** The target fields of a plan. */
export type LoadTarget = Pick<
  LoadPlan,
  "protocol" | "host" | "port" | "serverName" | "tls" | "headers" | "body" | "timeoutMs"
>;

async function resolveHost(host: string): Promise<string> {
  const bare = host.replace(/^\[|\]$/g, "");
  if (/^[\d.]+$/.test(bare) || bare.includes(":")) return bare;
  if (bare === "localhost") return "127.0.0.1";
  for (const type of ["A", "AAAA"] as const) {
    try {
      const found = await Deno.resolveDns(bare, type);
      if (found.length) return found[0];
    } catch {
      // try the next record type
    }
  }
  throw new TypeError(`Cannot resolve ${bare}`);
}

/** Turns a URL into the plan's target; throws a one-line `TypeError` for a bad URL or host. */
export async function loadTarget(
  urlText: string,
  options: TargetOptions = {},
): Promise<LoadTarget> {
  const url = parseOrigin(urlText);
  const tls = url.protocol === "https:";
  if (options.h3 && !tls) throw new TypeError("--h3 needs an https:// URL");
  const port = url.port ? Number(url.port) : tls ? 443 : 80;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const method = (options.method ?? (options.body ? "POST" : "GET")).toUpperCase();
  const extra: Record<string, string> = { ...options.headers };
  if (options.body && !Object.keys(extra).some((k) => k.toLowerCase() === "content-type")) {
    extra["content-type"] = "application/json";
  }
  const sbi = sbiRequestHeaders(extra, { timeoutMs, nfType: options.nfType });
  const headers: HeaderList = [
    [":method", method],
    [":scheme", url.protocol.slice(0, -1)],
    [":authority", url.host],
    [":path", (url.pathname || "/") + url.search],
  ];
  for (const [k, v] of Object.entries(sbi)) headers.push([k, v]);
  if (options.body) headers.push(["content-length", String(options.body.length)]);
  const serverName = url.hostname.replace(/^\[|\]$/g, "");
  return {
    protocol: options.h3 ? "h3" : "h2",
    host: await resolveHost(url.hostname),
    port,
    serverName,
    tls,
    headers,
    ...(options.body ? { body: options.body } : {}),
    timeoutMs,
  };
}
