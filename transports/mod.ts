/**
 * Every transport behind one pair of factories, on either stack (see
 * `StackName`): `native` (nghttp2 / ngtcp2 modules through FFI, GnuTLS) or
 * `deno` (`Deno.serve` and `fetch` for h2, Deno's QUIC with nghttp3 framing for h3). Native modules load lazily.
 */
import type { SbiHandler } from "../handler/types.ts";
import {
  type ClientOptions,
  type SbiClient,
  type SbiServer,
  type ServerOptions,
  type StackName,
  type TransportName,
  TRANSPORTS,
} from "./types.ts";
import { resolveStack } from "./stack.ts";

export { resolveStack, STACK_ENV } from "./stack.ts";

export * from "./types.ts";
export * from "./server_limits.ts";
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

/** Starts a server for `transport` around `handler`, on `options.stack` (default native). */
export async function createServer(
  transport: TransportName,
  handler: SbiHandler,
  options: ServerOptions = {},
): Promise<SbiServer> {
  const stack = resolveStack(options.stack);
  if (stack === "deno") {
    if (transport === "h3") {
      return await (await import("./deno/h3_server.ts")).createDenoH3Server(handler, options);
    }
    const h2 = await import("./deno/server.ts");
    if (transport === "h2c") return await h2.createDenoH2cServer(handler, options);
    return await h2.createDenoH2TlsServer(handler, options);
  }
  if (transport === "h3") {
    return await (await import("./h3/mod.ts")).createNativeH3Server(handler, options);
  }
  const native = await import("./h2/server.ts");
  return transport === "h2c"
    ? await native.createNativeH2cServer(handler, options)
    : await native.createNativeH2TlsServer(handler, options);
}

/** Creates a client for `transport` bound to `origin`, on `options.stack` (default native). */
export async function createClient(
  transport: TransportName,
  origin: string,
  options: ClientOptions = {},
): Promise<SbiClient> {
  const stack = resolveStack(options.stack);
  if (stack === "deno") {
    if (transport === "h3") {
      return await (await import("./deno/h3_client.ts")).createDenoH3Client(origin, options);
    }
    return await (await import("./deno/client.ts")).createDenoH2Client(origin, options);
  }
  if (transport === "h3") {
    return await (await import("./h3/mod.ts")).createNativeH3Client(origin, options);
  }
  return await (await import("./h2/client.ts")).createNativeH2Client(origin, options);
}

/**
 * Transports of `stack` usable on this machine: on the native stack, h2
 * needs the h2 module and h3 the h3 module.
 */
export async function availableTransports(stack?: StackName): Promise<TransportName[]> {
  const s = resolveStack(stack);
  if (s === "deno") {
    const out: TransportName[] = ["h2c", "h2-tls"];
    try {
      await (await import("./deno/h3_loader.ts")).loadDh3Library();
      out.push("h3");
    } catch {
      // the framing module is not built: the deno stack has h2 only here
    }
    return out;
  }
  const out: TransportName[] = [];
  const { h2NativeAvailable } = await import("./h2/loader.ts");
  if (await h2NativeAvailable()) out.push("h2c", "h2-tls");
  try {
    const mod = await import("./h3/mod.ts");
    if (await mod.h3Available()) out.push("h3");
  } catch {
    // h3 not built or not present
  }
  return out;
}
