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
import type {
  ClientOptions,
  ClientResponse,
  ConnectionInfo,
  StackName,
} from "../transports/types.ts";

import { asUsage, exclusive, parseDuration, parseExport, parseHeader, UsageError } from "./args.ts";
import { RequestError, requestFailureKind } from "./request_error.ts";
import { toHex } from "../transports/n32.ts";

interface RequestOptions {
  stack?: string;
  request?: string;
  header: string[];
  data?: string;
  dataBinary?: string;
  ca?: string;
  cert?: string;
  key?: string;
  insecure?: boolean;
  timeout: string;
  maxTime?: string;
  include?: boolean;
  verbose?: boolean;
  output?: string;
  silent?: boolean;
  showError?: boolean;
  fail?: boolean;
  h3?: boolean;
  nfType: string;
  export?: string;
}

/** Environment flag set when the process already ignores certificate errors (`-k`). */
export const INSECURE_ENV = "SBILAB_TLS_INSECURE";

async function readSource(source: string): Promise<Uint8Array> {
  if (source === "-") return new Uint8Array(await new Response(Deno.stdin.readable).arrayBuffer());
  try {
    return await Deno.readFile(source);
  } catch {
    throw new TypeError(`Cannot read ${source}`);
  }
}

/**
 * The request body: `-d` as curl has it (text as given; `@FILE` or `@-` read
 * with every CR and LF removed), `--data-binary` (`@FILE` byte for byte).
 * `lab bench` reads its `-d` and `--data-binary` the same way.
 */
export async function requestBody(
  o: { data?: string; dataBinary?: string },
): Promise<Uint8Array | undefined> {
  if (o.data !== undefined && o.dataBinary !== undefined) throw exclusive("-d", "--data-binary");
  if (o.dataBinary !== undefined) {
    if (o.dataBinary.startsWith("@")) return await readSource(o.dataBinary.slice(1));
    return new TextEncoder().encode(o.dataBinary);
  }
  if (o.data === undefined) return undefined;
  if (!o.data.startsWith("@")) return new TextEncoder().encode(o.data);
  const bytes = await readSource(o.data.slice(1));
  return bytes.filter((b) => b !== 0x0d && b !== 0x0a);
}

async function writeAll(
  out: { write(p: Uint8Array): Promise<number> },
  bytes: Uint8Array,
): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await out.write(bytes.subarray(off));
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** One `-v` line on stderr: `*` for information, `>` sent, `<` received. */
function trace(mark: "*" | ">" | "<", line: string): void {
  console.error(`${mark} ${line}`);
}

function traceConnection(info: ConnectionInfo | undefined, transport: TransportName): void {
  if (!info) return;
  trace("*", `${transport} over ${info.implementation} (${info.stack} stack)`);
  const t = info.tls;
  if (!t) return;
  const parts = [t.version, t.suite, t.group].filter(Boolean).join(" / ");
  const resumed = t.resumed ? ", resumed" : "";
  const early = t.earlyData && t.earlyData !== "none" ? `, 0-RTT ${t.earlyData}` : "";
  trace("*", `TLS: ${parts || "details not exposed"} (${t.library}${resumed}${early})`);
}

/** The exit statuses of `lab request`, as curl's for the same failures (see main.ts). */
const EXIT_HELP = `
Exit status (curl's for the same failure):
  0   success
  1   any other failure
  2   bad usage (an unknown or invalid option)
  3   malformed URL or unsupported scheme
  6   could not resolve the host
  7   failed to connect (nothing listens, connection refused)
  22  HTTP status 400 or more, with -f
  28  timed out (--timeout or --max-time)
  35  TLS handshake failed
  60  the server's certificate was not verified (use --ca, or -k)

Durations: 500ms, 5s, 2m; a bare number is milliseconds for --timeout and
seconds for --max-time (as curl's).`;

/** Adds `request`. */
export function registerRequestCommand(program: Command): void {
  program.command("request")
    .description("send one SBI request and print the response body (curl's habits)")
    .argument("<url>", "http:// for h2c, https:// for h2 over TLS (or h3 with --h3)")
    .option("-X, --request <method>", "HTTP method (default GET, or POST with -d)")
    .option("-H, --header <line>", "extra header 'Name: value' (repeatable)", collect, [])
    .option(
      "-d, --data <data>",
      "request body; @FILE (or @- for stdin) reads it with CR and LF removed, as curl's -d",
    )
    .option("--data-binary <data>", "request body; @FILE (or @-) is sent byte for byte")
    .option("--ca <file>", "CA certificate to trust")
    .option("--cert <file>", "client certificate for mutual TLS")
    .option("--key <file>", "client private key for mutual TLS")
    .option("-k, --insecure", "skip server certificate verification")
    .option("--timeout <time>", "per-request timeout (500ms, 5s; bare number = ms)", "5000")
    .option("-m, --max-time <time>", "give up after this long in all (2s, 500ms; bare number = s)")
    .option("-i, --include", "print status and headers before the body")
    .option("-v, --verbose", "show the request and response headers and TLS details on stderr")
    .option("-o, --output <file>", "write the body to FILE instead of stdout")
    .option("-s, --silent", "print no error message")
    .option("-S, --show-error", "with -s, still print the error message")
    .option("-f, --fail", "fail with exit status 22 and no body on an HTTP status of 400 or more")
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
    .addHelpText("after", EXIT_HELP)
    .action(async (urlText: string, o: RequestOptions) => {
      await request(urlText, o);
    });
}

/** The URL, or curl's exit 3 for a malformed one. */
export function requestUrl(urlText: string): URL {
  try {
    return parseOrigin(urlText);
  } catch (err) {
    throw new RequestError("url", (err as Error).message, { cause: err });
  }
}

async function request(urlText: string, o: RequestOptions): Promise<void> {
  const url = requestUrl(urlText);
  const stack = asUsage(() =>
    resolveStack(o.stack === undefined ? undefined : parseStack(o.stack))
  );
  if (o.h3 && url.protocol !== "https:") throw new UsageError("--h3 needs an https:// URL");
  const transport: TransportName = o.h3 ? "h3" : url.protocol === "https:" ? "h2-tls" : "h2c";
  const maxTimeMs = o.maxTime === undefined
    ? undefined
    : parseDuration(o.maxTime, "--max-time", { bare: "s", minMs: 1 });
  // the request's own timeout (and its 3gpp-Sbi-Max-Rsp-Time) never outlasts --max-time
  const timeoutMs = Math.min(
    parseDuration(o.timeout, "--timeout", { minMs: 1 }),
    maxTimeMs ?? Infinity,
  );
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
  const data = await requestBody(o);
  if (data && !Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) {
    headers["content-type"] = "application/json";
  }
  const tls = url.protocol === "https:" ? await clientTls(o, stack) : undefined;
  const silent = (o.silent ?? false) && !o.showError;
  const method = (o.request ?? (data ? "POST" : "GET")).toUpperCase();
  const path = url.pathname + url.search;
  const version = transport === "h3" ? "HTTP/3" : "HTTP/2";
  if (o.verbose) trace("*", `${method} ${url.origin}${path} over ${transport} (${stack} stack)`);
  // h3 (native): every datagram read in the module with its ECN mark, as lab serve does
  const clientOptions: ClientOptions & { exactEcn?: boolean } = {
    stack,
    tls,
    nfType: o.nfType,
    timeoutMs,
    exactEcn: true,
  };
  const client = await createClient(transport, url.origin, clientOptions);
  let deadline: ReturnType<typeof setTimeout> | undefined;
  try {
    const sent = client.request({
      method,
      path,
      headers,
      body: data,
      onRequestHeaders: o.verbose
        ? (sentHeaders) => {
          trace(">", `${method} ${path} ${version}`);
          trace(">", `:authority: ${url.host}`);
          for (const [k, v] of Object.entries(sentHeaders)) trace(">", `${k}: ${v}`);
          if (data) trace(">", `(${data.length} byte body)`);
          trace(">", "");
        }
        : undefined,
    });
    const res = maxTimeMs === undefined ? await sent : await Promise.race([
      sent,
      new Promise<never>((_, reject) => {
        deadline = setTimeout(
          () => reject(new RequestError("timeout", `Operation timed out after ${maxTimeMs} ms`)),
          maxTimeMs,
        );
      }),
    ]);
    if (o.verbose) {
      traceConnection(client.connectionInfo?.(), transport);
      trace("<", `${version} ${res.status}`);
      for (const [k, v] of Object.entries(res.headers)) trace("<", `${k}: ${v}`);
      trace("<", "");
    }
    const failed = o.fail === true && res.status >= 400;
    await writeResponse(res, o, version, failed);
    if (failed) {
      throw new RequestError("http", `The requested URL returned error: ${res.status}`, { silent });
    }
    if (exporter) {
      if (!client.exportKeyingMaterial) {
        throw new TypeError(`The ${stack} stack's ${transport} client has no TLS exporter`);
      }
      const key = await client.exportKeyingMaterial(exporter.label, undefined, exporter.length);
      console.error(`${exporter.label}:${exporter.length} ${toHex(key)}`);
    }
  } catch (err) {
    throw requestFailure(err, silent);
  } finally {
    clearTimeout(deadline);
    await client.close();
  }
}

/** The client's TLS material for an https:// URL from `--ca`, `--cert`, `--key` and `-k`. */
async function clientTls(o: RequestOptions, stack: StackName): Promise<TlsMaterial> {
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
  return {
    ca: o.ca ? { path: o.ca } : undefined,
    cert: o.cert ? { path: o.cert } : undefined,
    key: o.key ? { path: o.key } : undefined,
    insecure: o.insecure ?? false,
  };
}

/** Writes the answer to stdout or `-o`: the status line and headers with `-i`, the body unless `-f` failed. */
async function writeResponse(
  res: ClientResponse,
  o: RequestOptions,
  version: string,
  failed: boolean,
): Promise<void> {
  const out = o.output === undefined ? Deno.stdout : await Deno.open(o.output, {
    write: true,
    create: true,
    truncate: true,
  });
  try {
    // -f -i as curl: the status line and headers are shown, the body is not
    if (o.include) {
      const lines = [`${version} ${res.status}`];
      for (const [k, v] of Object.entries(res.headers)) lines.push(`${k}: ${v}`);
      await writeAll(out, new TextEncoder().encode(lines.join("\r\n") + "\r\n\r\n"));
    }
    if (!failed) await writeAll(out, res.body);
  } finally {
    if (out !== Deno.stdout) out.close();
  }
}

/**
 * The error a failed request ends with: a `RequestError` of curl's kind when
 * one fits (and always with `-s`, so main.ts stays silent), else the error itself.
 */
function requestFailure(err: unknown, silent: boolean): unknown {
  if (err instanceof RequestError) {
    return silent === err.silent ? err : new RequestError(err.kind, err.message, { silent });
  }
  const kind = requestFailureKind(err);
  if (kind === undefined && !silent) return err;
  const msg = err instanceof Error ? err.message : String(err);
  if (kind === undefined) return new RequestError("other", msg, { cause: err, silent });
  return new RequestError(kind, msg, { cause: err, silent });
}
