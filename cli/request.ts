/** `lab request`: one request like curl, over h2c, h2 over TLS or h3. */
import { parseOrigin } from "../transports/origin.ts";
import type { Command } from "commander";
import {
  createClient,
  parseStack,
  resolveStack,
  type TlsMaterial,
  type TransportName,
} from "../transports/mod.ts";
import { asUsage, parseDuration, parseExport, parseHeader, UsageError } from "./args.ts";
import { toHex } from "../transports/n32.ts";

interface RequestOptions {
  stack?: string;
  request?: string;
  header: string[];
  data?: string;
  ca?: string;
  cert?: string;
  key?: string;
  insecure?: boolean;
  timeout: string;
  include?: boolean;
  h3?: boolean;
  nfType: string;
  export?: string;
}

/** Environment flag set when the process already ignores certificate errors (`-k`). */
export const INSECURE_ENV = "SBILAB_TLS_INSECURE";

async function body(data: string | undefined): Promise<Uint8Array | undefined> {
  if (data === undefined) return undefined;
  if (data.startsWith("@")) {
    const file = data.slice(1);
    try {
      return await Deno.readFile(file);
    } catch {
      throw new TypeError(`Cannot read ${file}`);
    }
  }
  return new TextEncoder().encode(data);
}

async function writeAll(bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await Deno.stdout.write(bytes.subarray(off));
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Adds `request`. */
export function registerRequestCommand(program: Command): void {
  program.command("request")
    .description("send one SBI request and print the response body")
    .argument("<url>", "http:// for h2c, https:// for h2 over TLS (or h3 with --h3)")
    .option("-X, --request <method>", "HTTP method (default GET, or POST with -d)")
    .option("-H, --header <line>", "extra header 'Name: value' (repeatable)", collect, [])
    .option("-d, --data <data>", "request body, or @FILE to read it from a file")
    .option("--ca <file>", "CA certificate to trust")
    .option("--cert <file>", "client certificate for mutual TLS")
    .option("--key <file>", "client private key for mutual TLS")
    .option("-k, --insecure", "skip server certificate verification")
    .option("--timeout <time>", "per-request timeout (500ms, 5s; bare number = ms)", "5000")
    .option("-i, --include", "print status and headers before the body")
    .option("--h3", "use HTTP/3 over QUIC (https:// only)")
    .option(
      "--stack <stack>",
      "native (nghttp2/ngtcp2, GnuTLS; default) or deno (fetch for h2; Deno's QUIC + nghttp3 for h3)",
    )
    .option("--nf-type <type>", "NF type in User-Agent", "SMF")
    .option(
      "--export <label:len>",
      "print the connection's TLS exporter output (RFC 5705) as hex on stderr, e.g. EXPORTER_3GPP_N32_MASTER:64",
    )
    .action(async (urlText: string, o: RequestOptions) => {
      const url = parseOrigin(urlText);
      const stack = asUsage(() =>
        resolveStack(o.stack === undefined ? undefined : parseStack(o.stack))
      );
      if (o.h3 && url.protocol !== "https:") throw new TypeError("--h3 needs an https:// URL");
      const transport: TransportName = o.h3 ? "h3" : url.protocol === "https:" ? "h2-tls" : "h2c";
      const timeoutMs = parseDuration(o.timeout, "--timeout", { minMs: 1 });
      const exporter = o.export === undefined ? undefined : parseExport(o.export);
      if (exporter && url.protocol !== "https:") {
        throw new UsageError("--export needs TLS: an https:// URL");
      }
      if (exporter && stack === "deno") {
        throw new UsageError("--export needs the native stack (fetch exposes no TLS exporter)");
      }
      const headers: Record<string, string> = {};
      for (const h of o.header) {
        const [k, v] = parseHeader(h);
        headers[k] = v;
      }
      const data = await body(o.data);
      if (data && !Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) {
        headers["content-type"] = "application/json";
      }
      let tls: TlsMaterial | undefined;
      if (url.protocol === "https:") {
        for (const f of [o.ca, o.cert, o.key].filter(Boolean) as string[]) {
          try {
            await Deno.stat(f);
          } catch {
            throw new TypeError(`Cannot read ${f}`);
          }
        }
        if (o.insecure && stack === "deno" && Deno.env.get(INSECURE_ENV) !== "1") {
          throw new TypeError(
            "-k over h2 needs the runtime flag: run with deno run --unsafely-ignore-certificate-errors, or pass --ca",
          );
        }
        tls = {
          ca: o.ca ? { path: o.ca } : undefined,
          cert: o.cert ? { path: o.cert } : undefined,
          key: o.key ? { path: o.key } : undefined,
          insecure: o.insecure ?? false,
        };
      }
      const client = await createClient(transport, url.origin, {
        stack,
        tls,
        nfType: o.nfType,
        timeoutMs,
      });
      try {
        const res = await client.request({
          method: (o.request ?? (data ? "POST" : "GET")).toUpperCase(),
          path: url.pathname + url.search,
          headers,
          body: data,
        });
        if (o.include) {
          const lines = [`${transport === "h3" ? "HTTP/3" : "HTTP/2"} ${res.status}`];
          for (const [k, v] of Object.entries(res.headers)) lines.push(`${k}: ${v}`);
          await writeAll(new TextEncoder().encode(lines.join("\r\n") + "\r\n\r\n"));
        }
        await writeAll(res.body);
        if (exporter) {
          if (!client.exportKeyingMaterial) {
            throw new TypeError(`The ${stack} stack's ${transport} client has no TLS exporter`);
          }
          const key = await client.exportKeyingMaterial(exporter.label, undefined, exporter.length);
          console.error(`${exporter.label}:${exporter.length} ${toHex(key)}`);
        }
      } finally {
        await client.close();
      }
    });
}
