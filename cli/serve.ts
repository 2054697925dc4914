/** `lab serve`: one handler behind every requested transport. */
import type { Command } from "commander";
import { createHandler } from "../handler/mod.ts";
import {
  createServer,
  parseStack,
  parseTransports,
  resolveStack,
  type SbiServer,
  type ServerOptions,
  type TlsMaterial,
} from "../transports/mod.ts";
import {
  DEV_PKI_FILES,
  issueServerCertificate,
  readDevPki,
  writeDevPki,
} from "../transports/pki.ts";
import { defaultStateDir } from "./state.ts";
import { parsePort, parsePositiveInt } from "./args.ts";

interface ServeOptions {
  stack?: string;
  transports: string;
  host: string;
  h2cPort: string;
  tlsPort: string;
  cert?: string;
  key?: string;
  ca?: string;
  mtls?: boolean;
  stateDir?: string;
  delayMs?: string;
  maxBody?: string;
  h3MaxUdpPayload?: string;
}

const LOCAL_HOSTS = new Set(["127.0.0.1", "localhost", "::1", "0.0.0.0", "::"]);

/** Loads the dev PKI from `dir`, creating it on first use. */
export async function ensureDevPki(dir: string) {
  try {
    return await readDevPki(dir);
  } catch {
    return await writeDevPki(dir);
  }
}

async function serverTls(o: ServeOptions): Promise<TlsMaterial> {
  if (o.cert || o.key) {
    if (!o.cert || !o.key) throw new TypeError("--cert and --key go together");
    for (const f of [o.cert, o.key, o.ca].filter(Boolean) as string[]) {
      try {
        await Deno.stat(f);
      } catch {
        throw new TypeError(`Cannot read ${f}`);
      }
    }
    if (o.mtls && !o.ca) throw new TypeError("--mtls needs --ca to verify client certificates");
    return {
      cert: { path: o.cert },
      key: { path: o.key },
      ca: o.ca ? { path: o.ca } : undefined,
      requireClientCert: o.mtls ?? false,
    };
  }
  const dir = o.stateDir ?? defaultStateDir();
  const pki = await ensureDevPki(dir);
  console.error(`dev PKI in ${dir} (trust ${dir}/${DEV_PKI_FILES.ca})`);
  let server = { certPem: pki.serverCertPem, keyPem: pki.serverKeyPem };
  if (!LOCAL_HOSTS.has(o.host)) {
    // A specific address (a lab box, a link namespace): name it in the certificate.
    server = await issueServerCertificate(pki, [o.host, "localhost", "127.0.0.1", "::1"]);
  }
  return {
    cert: server.certPem,
    key: server.keyPem,
    ca: o.ca ? { path: o.ca } : pki.caCertPem,
    requireClientCert: o.mtls ?? false,
  };
}

/** Adds `serve`. */
export function registerServeCommand(program: Command): void {
  program.command("serve")
    .description("serve the SBI handler on h2c, h2 over TLS and h3")
    .option(
      "--stack <stack>",
      "native (nghttp2/ngtcp2, GnuTLS; default) or deno (Deno.serve, h2 only)",
    )
    .option("--transports <list>", "comma-separated: h2c,h2-tls,h3", "h2c,h2-tls")
    .option("--host <host>", "address to bind", "127.0.0.1")
    .option("--h2c-port <port>", "h2c TCP port (0 = any)", "7777")
    .option("--tls-port <port>", "h2-tls TCP and h3 UDP port (0 = any)", "7778")
    .option("--cert <file>", "server certificate (PEM or DER)")
    .option("--key <file>", "server private key (PEM or DER)")
    .option("--ca <file>", "CA for client certificates (with --mtls)")
    .option("--mtls", "require client certificates")
    .option("--state-dir <dir>", "where the dev PKI lives (default ~/.local/state/sbilab)")
    .option("--delay-ms <ms>", "delay every /nbench answer by this much", "0")
    .option("--max-body <bytes>", "largest request body the handler accepts")
    .option(
      "--h3-max-udp-payload <bytes>",
      "h3: send datagrams up to this size (a path MTU you know, 1200-65527) instead of 1200 B + PMTUD",
    )
    .action(async (o: ServeOptions) => {
      const stack = resolveStack(o.stack === undefined ? undefined : parseStack(o.stack));
      const transports = parseTransports(o.transports);
      const h2cPort = parsePort(o.h2cPort, "--h2c-port");
      const tlsPort = parsePort(o.tlsPort, "--tls-port");
      const delayMs = parsePositiveInt(o.delayMs ?? "0", "--delay-ms", true);
      const h3MaxUdpPayload = o.h3MaxUdpPayload === undefined
        ? undefined
        : parsePositiveInt(o.h3MaxUdpPayload, "--h3-max-udp-payload");
      if (h3MaxUdpPayload !== undefined && (h3MaxUdpPayload < 1200 || h3MaxUdpPayload > 65527)) {
        throw new RangeError(`--h3-max-udp-payload must be 1200-65527, got ${h3MaxUdpPayload}`);
      }
      const needsTls = transports.some((t) => t !== "h2c");
      const tls = needsTls ? await serverTls(o) : undefined;
      const handler = createHandler({
        delayMs,
        ...(o.maxBody ? { maxBodyBytes: parsePositiveInt(o.maxBody, "--max-body") } : {}),
        onError: (err, req) =>
          console.error(
            `handler error on ${req.method} ${req.path}: ${(err as Error)?.message ?? err}`,
          ),
      });
      const servers: SbiServer[] = [];
      const stop = async () => {
        await Promise.allSettled(servers.map((s) => s.close()));
        Deno.exit(0);
      };
      Deno.addSignalListener("SIGINT", stop);
      Deno.addSignalListener("SIGTERM", stop);
      try {
        for (const t of transports) {
          const port = t === "h2c" ? h2cPort : tlsPort;
          const options: ServerOptions & { maxUdpPayload?: number } = {
            stack,
            hostname: o.host,
            port,
            tls,
          };
          if (t === "h3") options.maxUdpPayload = h3MaxUdpPayload;
          const server = await createServer(t, handler, options);
          servers.push(server);
          console.log(`${t} listening on ${server.url}`);
          if (t === "h3") {
            console.error(
              h3MaxUdpPayload === undefined
                ? "h3 datagrams: 1200 B, then path MTU discovery up to 1444 B"
                : `h3 datagrams: up to ${h3MaxUdpPayload} B (--h3-max-udp-payload), never above the client's limit`,
            );
          }
        }
      } catch (err) {
        await Promise.allSettled(servers.map((s) => s.close()));
        throw err;
      }
    });
}
