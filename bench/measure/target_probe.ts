/**
 * Before a run against a server elsewhere (`--target`): one request per
 * transport tells which endpoints answer, so the run measures those and
 * names the others as failed instead of aborting on the first. An h2-TLS
 * answer's `Alt-Svc: h3=":PORT"` points h3 at its own port when no
 * `--target-h3` was given, as browsers discover HTTP/3.
 */
import type { SbiClient, StackName, TransportName } from "../../transports/types.ts";
import { type Endpoints, ServerSetupError } from "./servers.ts";

/** A transport whose endpoint did not answer. */
export interface FailedTarget {
  transport: TransportName;
  /** The origin it was tried at. */
  origin: string;
  /** The client's error, one line. */
  reason: string;
}

/** What {@linkcode probeTargets} found. */
export interface TargetProbe {
  /** Transports that answered, in the order given. */
  reachable: TransportName[];
  /** Transports that did not. */
  failed: FailedTarget[];
  /** Origins, with h3's taken from Alt-Svc when that is where it answered. */
  urls: Partial<Record<TransportName, string>>;
  /** Set when h3's origin came from the h2-TLS answer's Alt-Svc. */
  altSvc?: string;
}

/** Options for {@linkcode probeTargets}. */
export interface ProbeOptions {
  /** Opens a client for one transport at one origin. */
  open: (transport: TransportName, origin: string) => Promise<SbiClient>;
  /** Path to request. Default `/nbench/v1/payload?size=1`. */
  path?: string;
  /** Follow an h2-TLS answer's Alt-Svc for h3 (no `--target-h3` given). Default false. */
  altSvc?: boolean;
}

/** Parses the first `h3=":port"` or `h3="host:port"` of an Alt-Svc value into an origin. */
export function altSvcH3Origin(value: string | undefined, base: string): string | undefined {
  if (!value) return undefined;
  const m = /(?:^|,)\s*h3="([^"]*)"/.exec(value);
  if (!m) return undefined;
  const at = m[1].lastIndexOf(":");
  const port = Number(m[1].slice(at + 1));
  if (at < 0 || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  const url = new URL(base);
  const host = m[1].slice(0, at);
  if (host) url.hostname = host;
  url.port = String(port);
  return url.origin;
}

async function tryOne(
  transport: TransportName,
  origin: string,
  options: ProbeOptions,
): Promise<{ ok: true; altSvc?: string } | { ok: false; reason: string }> {
  let client: SbiClient | undefined;
  try {
    client = await options.open(transport, origin);
    const res = await client.request({ path: options.path ?? "/nbench/v1/payload?size=1" });
    return { ok: true, altSvc: res.headers["alt-svc"] };
  } catch (err) {
    return { ok: false, reason: (err instanceof Error ? err.message : String(err)).split("\n")[0] };
  } finally {
    await client?.close().catch(() => {});
  }
}

/** Sends one request per transport and sorts them into reachable and failed. */
export async function probeTargets(
  urls: Partial<Record<TransportName, string>>,
  transports: readonly TransportName[],
  options: ProbeOptions,
): Promise<TargetProbe> {
  const out: TargetProbe = { reachable: [], failed: [], urls: { ...urls } };
  const order = [...transports].sort((a, b) => (a === "h3" ? 1 : 0) - (b === "h3" ? 1 : 0));
  let altOrigin: string | undefined;
  const seen = new Set<TransportName>();
  for (const t of order) {
    const origin = urls[t];
    if (!origin) continue;
    const r = await tryOne(t, origin, options);
    if (r.ok) {
      seen.add(t);
      if (t === "h2-tls" && options.altSvc) altOrigin = altSvcH3Origin(r.altSvc, origin);
      continue;
    }
    if (t === "h3" && altOrigin && altOrigin !== origin) {
      const again = await tryOne(t, altOrigin, options);
      if (again.ok) {
        seen.add(t);
        out.urls.h3 = altOrigin;
        out.altSvc = altOrigin;
        continue;
      }
    }
    out.failed.push({ transport: t, origin, reason: r.reason });
  }
  out.reachable = transports.filter((t) => seen.has(t));
  return out;
}

/** Options for {@linkcode reachableTarget}. */
export interface ReachableOptions {
  /** The clients' stack. */
  stack: StackName;
  /** Follow Alt-Svc for h3. Default false. */
  altSvc?: boolean;
  /** Where the run's notes go: one per failed transport, one for an Alt-Svc origin. */
  notes: string[];
  /** Per-probe timeout, ms. Default 3000. */
  timeoutMs?: number;
  /** Path to request (any answer counts: statuses are judged per row). Default the payload GET. */
  path?: string;
}

/**
 * The target's endpoints reduced to those that answer one request; each
 * other transport gets a note saying it failed and why. Throws
 * `ServerSetupError` when none answers.
 */
export async function reachableTarget(
  endpoints: Endpoints,
  transports: readonly TransportName[],
  options: ReachableOptions,
): Promise<Endpoints> {
  const { createClient } = await import("../../transports/mod.ts");
  const probe = await probeTargets(endpoints.urls, transports, {
    altSvc: options.altSvc,
    path: options.path,
    open: (t, origin) =>
      createClient(t, origin, {
        stack: options.stack,
        tls: t === "h2c" ? undefined : endpoints.tls,
        timeoutMs: options.timeoutMs ?? 3000,
      }),
  });
  if (probe.reachable.length === 0) {
    const why = probe.failed.map((f) => `${f.transport} at ${f.origin}: ${f.reason}`).join("; ");
    throw new ServerSetupError(`No transport of the target answered (${why})`);
  }
  for (const f of probe.failed) {
    options.notes.push(
      `${f.transport} FAILED at ${f.origin}: ${f.reason}. Not measured; the other transports were.` +
        (f.transport === "h3" ? " Give h3 its own URL with --target-h3." : ""),
    );
  }
  if (probe.altSvc) {
    options.notes.push(`h3 found through the h2-TLS answer's Alt-Svc at ${probe.altSvc}.`);
  }
  const urls: Endpoints["urls"] = {};
  for (const t of probe.reachable) urls[t] = probe.urls[t];
  return { ...endpoints, urls };
}
