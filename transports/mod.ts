/**
 * Every transport behind one pair of factories. h3 is loaded lazily because
 * it needs the native module; h2c and h2-tls are always there.
 */
import type { SbiHandler } from "../handler/types.ts";
import {
  type ClientOptions,
  type SbiClient,
  type SbiServer,
  type ServerOptions,
  type TransportName,
  TRANSPORTS,
} from "./types.ts";
import {
  createH2Client,
  createH2cServer,
  createH2TlsServer,
  createNativeH2cServer,
} from "./h2/mod.ts";

export * from "./types.ts";
export * from "./tls.ts";

/** Parses a comma-separated transport list; throws `RangeError` naming an unknown one. */
export function parseTransports(list: string): TransportName[] {
  const names = list.split(",").map((s) => s.trim()).filter(Boolean);
  if (names.length === 0) throw new RangeError("No transport given (choose from h2c, h2-tls, h3)");
  for (const n of names) {
    if (!(TRANSPORTS as readonly string[]).includes(n)) {
      throw new RangeError(`Unknown transport ${n} (choose from ${TRANSPORTS.join(", ")})`);
    }
  }
  return [...new Set(names)] as TransportName[];
}

// deno-lint-ignore no-explicit-any
async function h3(): Promise<any> {
  return await import("./h3/mod.ts");
}

/** Starts a server for `transport` around `handler`. */
export async function createServer(
  transport: TransportName,
  handler: SbiHandler,
  options: ServerOptions = {},
): Promise<SbiServer> {
  switch (transport) {
    case "h2c":
      if (options.stack === "native") return await createNativeH2cServer(handler, options);
      if (options.stack !== undefined && options.stack !== "deno") {
        throw new RangeError(`Unknown stack ${options.stack} (choose native or deno)`);
      }
      return await createH2cServer(handler, options);
    case "h2-tls":
      return await createH2TlsServer(handler, options);
    case "h3":
      return await (await h3()).createH3Server(handler, options);
  }
}

/** Creates a client for `transport` bound to `origin`. */
export async function createClient(
  transport: TransportName,
  origin: string,
  options: ClientOptions = {},
): Promise<SbiClient> {
  switch (transport) {
    case "h2c":
    case "h2-tls":
      return await createH2Client(origin, options);
    case "h3":
      return await (await h3()).createH3Client(origin, options);
  }
}

/** Transports usable on this machine: h3 only when its native module loads. */
export async function availableTransports(): Promise<TransportName[]> {
  const out: TransportName[] = ["h2c", "h2-tls"];
  try {
    const mod = await h3();
    if (typeof mod.h3Available !== "function" || await mod.h3Available()) out.push("h3");
  } catch {
    // h3 not built or not present
  }
  return out;
}
