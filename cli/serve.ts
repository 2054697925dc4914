/** `lab serve`: one handler behind every requested transport. */
import type { Command } from "commander";
import { createHandler, type SbiHandler } from "../handler/mod.ts";
import {
  availableTransports,
  createServer,
  DEFAULT_SERVER_LIMITS,
  parseTransports,
  resolveServerLimits,
  resolveStack,
  type SbiServer,
  serverLimitRows,
  type ServerOptions,
  type StackName,
  type TlsConnection,
  type TlsMaterial,
  type TransportName,
} from "../transports/mod.ts";
import { formatBytes } from "../lib/units.ts";
import { connectionsWithin, raiseFdLimit } from "../transports/fd_limit.ts";
import { ByteBudget } from "../transports/byte_budget.ts";
import {
  DEV_PKI_FILES,
  issueServerCertificate,
  readDevPki,
  writeDevPki,
} from "../transports/pki.ts";
import { defaultStateDir } from "./state.ts";
import { startStopWatchdog } from "./stop_watchdog.ts";
import { listeningLine } from "../lib/listening.ts";
import {
  asUsage,
  type ExportSpec,
  parseDuration,
  parseExport,
  parseInteger,
  parsePort,
  UsageError,
} from "./args.ts";
import { toHex } from "../transports/n32.ts";
import { type NativeIo, parseNativeIo } from "../transports/native/io_loop.ts";

interface ServeOptions {
  stack?: string;
  transports?: string;
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
  h3Retry?: boolean;
  h3ExactEcn?: boolean;
  h3Io?: string;
  io?: string;
  nrfMaxInstances?: string;
  nrfMaxProfile?: string;
  maxJsonDepth?: string;
  nrfAnyId?: boolean;
  maxConnections?: string;
  handshakeTimeout?: string;
  idleTimeout?: string;
  stallTimeout?: string;
  maxInflightBodies?: string;
  maxQueuedResponses?: string;
  export?: string;
  ticketLifetime?: string;
  earlyData: boolean;
}

/** One stderr line for a TLS connection a server accepted, with the exporter output when asked for. */
function tlsLine(transport: string, conn: TlsConnection, exporter: ExportSpec | undefined): string {
  const i = conn.info();
  const what = [i.version, i.cipherSuite, i.group, i.resumed ? "resumed" : "full handshake"];
  if (i.earlyData === "accepted") what.push("0-RTT");
  if (i.peerSubject) what.push(`client ${i.peerSubject}`);
  const head = `${transport} TLS from ${conn.remoteAddr.hostname}:${conn.remoteAddr.port} (${
    what.join(", ")
  })`;
  if (!exporter) return head;
  const key = conn.exportKeyingMaterial(exporter.label, undefined, exporter.length);
  return `${head} ${exporter.label}:${exporter.length} ${toHex(key)}`;
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

/** Names the address when `--host` is not one of this machine's. */
function bindError(err: unknown, host: string): unknown {
  if (err instanceof Deno.errors.AddrNotAvailable || /os error 99\b/.test(String(err))) {
    return new UsageError(`--host ${host} is not an address of this machine`, { cause: err });
  }
  return err;
}

/** An optional positive integer option, undefined when not given. */
function optionalDuration(value: string | undefined, flag: string): number | undefined {
  return value === undefined ? undefined : parseDuration(value, flag, { minMs: 1 });
}

function optionalInt(value: string | undefined, flag: string, allowZero = false) {
  return value === undefined ? undefined : parseInteger(value, flag, { min: allowZero ? 0 : 1 });
}

/**
 * How long a stop may take before the process is ended anyway: the drain
 * (in-flight requests finish) plus one second to close the connections.
 */
export function stopBoundMs(drainMs = DEFAULT_SERVER_LIMITS.drainMs): number {
  return drainMs + 1000;
}

/**
 * The resource limits of one `lab serve` process, the same fields for every
 * stack and transport (see `resolveServerLimits`); unset ones take the
 * defaults, and the budgets are shared by all its servers. The soft fd limit
 * is raised to the hard limit first, and the connection cap defaults to what
 * it leaves after a reserve, shared by the TCP listeners.
 */
function serveLimits(
  o: ServeOptions,
  transports: TransportName[],
): ServerOptions & { maxBodyBytes: number } {
  const fd = raiseFdLimit();
  const tcpListeners = transports.filter((t) => t !== "h3").length;
  const fits = fd ? connectionsWithin(fd, tcpListeners) : DEFAULT_SERVER_LIMITS.maxConnections;
  const maxConnections = optionalInt(o.maxConnections, "--max-connections") ??
    Math.min(DEFAULT_SERVER_LIMITS.maxConnections, fits);
  if (fd && maxConnections > fits) {
    console.error(
      `warning: --max-connections ${maxConnections} is more than the fd limit ${fd.soft} leaves (${fits})`,
    );
  }
  const limits = resolveServerLimits({
    maxBodyBytes: optionalInt(o.maxBody, "--max-body"),
    maxConnections,
    handshakeTimeoutMs: optionalDuration(o.handshakeTimeout, "--handshake-timeout"),
    idleTimeoutMs: optionalDuration(o.idleTimeout, "--idle-timeout"),
    stallTimeoutMs: optionalDuration(o.stallTimeout, "--stall-timeout"),
    ticketLifetimeSeconds: optionalInt(o.ticketLifetime, "--ticket-lifetime", true),
  });
  const inflight = optionalInt(o.maxInflightBodies, "--max-inflight-bodies") ??
    limits.maxInflightBodyBytes;
  const queued = optionalInt(o.maxQueuedResponses, "--max-queued-responses") ??
    limits.maxQueuedResponseBytes;
  return {
    maxBodyBytes: limits.maxBodyBytes,
    maxConnections: limits.maxConnections,
    handshakeTimeoutMs: limits.handshakeTimeoutMs,
    idleTimeoutMs: limits.idleTimeoutMs,
    stallTimeoutMs: limits.stallTimeoutMs,
    ticketLifetimeSeconds: limits.ticketLifetimeSeconds,
    bodyBudget: new ByteBudget(inflight),
    responseBudget: new ByteBudget(queued),
  };
}

/** The limits every server applies unless an option sets one, as `lab serve --help` prints them. */
export function limitsHelp(): string {
  const rows = serverLimitRows(resolveServerLimits());
  const width = Math.max(...rows.map((r) => r.option.length));
  const lines = rows.map((r) => {
    const value = r.unit === "bytes"
      ? `${r.value} bytes (${formatBytes(r.value)})`
      : r.unit === "count"
      ? String(r.value)
      : `${r.value} ${r.unit}`;
    const note = r.name === "maxConnections" ? ", or what the fd limit leaves" : "";
    return `  ${r.option.padEnd(width)}  ${value}${note}`;
  });
  return `\nLimits in force on every stack and transport unless set:\n${lines.join("\n")}\n`;
}

/** What the h3 server sends as datagrams, per stack (quinn's sizes are its own defaults). */
function datagramLine(stack: StackName, maxUdpPayload: number | undefined): string {
  if (stack === "deno") {
    return "h3 datagrams: quinn's own (1200 B, then its path MTU discovery up to 1452 B); " +
      "Deno exposes neither the setting nor the sizes sent";
  }
  return maxUdpPayload === undefined
    ? "h3 datagrams: 1200 B, then path MTU discovery up to 1444 B"
    : `h3 datagrams: up to ${maxUdpPayload} B (--h3-max-udp-payload), never above the client's limit`;
}

/** Adds `serve`. */
export function registerServeCommand(program: Command): void {
  program.command("serve")
    .description("serve the SBI handler on h2c, h2 over TLS and h3")
    .option(
      "--stack <stack>",
      "native (nghttp2/ngtcp2, GnuTLS; default) or deno (Deno.serve for h2; Deno's QUIC (quinn) + nghttp3 for h3)",
    )
    .option(
      "--transports <list>",
      "comma-separated: h2c,h2-tls,h3 (default: all three, h3 where the stack's HTTP/3 module is built)",
    )
    .option("--host <host>", "address to bind", "127.0.0.1")
    .option("--h2c-port <port>", "h2c TCP port (0 = any)", "7777")
    .option("--tls-port <port>", "h2-tls TCP and h3 UDP port (0 = any)", "7778")
    .option("--cert <file>", "server certificate (PEM or DER)")
    .option("--key <file>", "server private key (PEM or DER)")
    .option("--ca <file>", "CA for client certificates (with --mtls)")
    .option("--mtls", "require client certificates")
    .option("--state-dir <dir>", "where the dev PKI lives (default ~/.local/state/sbilab)")
    .option("--delay-ms <ms>", "delay every /nbench answer by this much", "0")
    .option("--max-body <bytes>", "largest request body, on every transport (then 413)")
    .option("--h3-retry", "h3: validate client addresses with Retry, then NEW_TOKEN")
    .option(
      "--h3-exact-ecn",
      "h3: read every datagram in the module so ACKs count every ECN mark (the default)",
    )
    .option(
      "--no-h3-exact-ecn",
      "h3: read the first datagram of a wake-up through Deno (its ECN mark goes uncounted; no thread crossing per wake-up, as the benchmarks run)",
    )
    .option(
      "--io <who>",
      "native stack: who reads and writes the sockets of h2c, h2-tls and h3: runtime (Deno's reactor) or module (the module's own I/O thread; default: SBILAB_NATIVE_IO, else runtime)",
    )
    .option(
      "--h3-io <who>",
      "h3: who reads and writes the socket: runtime (Deno's reactor) or module (the module's own I/O thread, every ECN mark read; default: SBILAB_NATIVE_IO, else runtime)",
    )
    .option(
      "--h3-max-udp-payload <bytes>",
      "h3: send datagrams up to this size (a path MTU you know, 1200-65527) instead of 1200 B + PMTUD",
    )
    .option("--nrf-max-instances <n>", "NF instances the NRF holds at most (then 403)", "4096")
    .option("--nrf-max-profile <bytes>", "largest NFProfile in bytes (then 413)", "65536")
    .option("--max-json-depth <n>", "deepest JSON nesting accepted (then 400)", "32")
    .option("--nrf-any-id", "accept any nfInstanceId, not only a UUID")
    .option("--max-connections <n>", "TCP connections per h2 listener")
    .option(
      "--handshake-timeout <time>",
      "h2: TLS, preface and SETTINGS due within this after connect (deno stack: the first request); h3: QUIC handshake (10s, 500ms; bare number = ms)",
    )
    .option(
      "--idle-timeout <time>",
      "close a connection idle this long (h2 and h3; 60s, 500ms; bare number = ms)",
    )
    .option(
      "--stall-timeout <time>",
      "h2: reset a response the peer has not read for this (deno stack: its connection); h3: close its connection (bare number = ms)",
    )
    .option("--max-inflight-bodies <bytes>", "request-body bytes held at once (then 503)")
    .option(
      "--max-queued-responses <bytes>",
      "response bytes queued for slow readers: per server on the native stack (h2 and h3), per process on deno",
    )
    .option(
      "--export <label:len>",
      "log each TLS connection's peer and the server's exporter output (RFC 5705) as hex, e.g. EXPORTER_3GPP_N32_MASTER:64",
    )
    .option(
      "--ticket-lifetime <s>",
      "TLS 1.3 session ticket lifetime and key rotation period (0 = no tickets)",
    )
    .option("--no-early-data", "h3: refuse 0-RTT (resumed clients wait for the handshake)")
    .addHelpText("after", limitsHelp())
    .action(serve);
}

/** The handler `lab serve` puts behind every server, with the NRF bounds of its options. */
function serveHandler(o: ServeOptions, delayMs: number, maxBodyBytes: number): SbiHandler {
  return createHandler({
    delayMs,
    maxBodyBytes,
    nrf: {
      maxInstances: parseInteger(o.nrfMaxInstances ?? "4096", "--nrf-max-instances", {
        min: 1,
      }),
      maxProfileBytes: parseInteger(o.nrfMaxProfile ?? "65536", "--nrf-max-profile", {
        min: 1,
      }),
      maxJsonDepth: parseInteger(o.maxJsonDepth ?? "32", "--max-json-depth", { min: 1 }),
      anyInstanceId: o.nrfAnyId ?? false,
    },
    onError: (err, req) =>
      console.error(
        `handler error on ${req.method} ${req.path}: ${(err as Error)?.message ?? err}`,
      ),
  });
}

/** One server's options: the process's limits and TLS, its port, its log lines, its I/O, h3's own knobs. */
function transportOptions(
  t: TransportName,
  o: ServeOptions,
  shared: {
    stack: StackName;
    port: number;
    tls: TlsMaterial | undefined;
    limits: ServerOptions;
    exporter: ExportSpec | undefined;
    h3MaxUdpPayload: number | undefined;
  },
) {
  const { stack, port, tls, limits, exporter } = shared;
  const options: ServerOptions & {
    maxUdpPayload?: number;
    maxQueuedBytes?: number;
    retry?: boolean;
    exactEcn?: boolean;
    earlyData?: boolean;
    io?: NativeIo;
  } = {
    stack,
    hostname: o.host,
    port,
    tls,
    ...limits,
    onError: (err: unknown) =>
      console.error(`${t}: ${String((err as Error)?.message ?? err).split("\n")[0]}`),
    earlyData: o.earlyData,
    onTls: exporter
      ? (conn: TlsConnection) => console.error(tlsLine(t, conn, exporter))
      : undefined,
  };
  if (t === "h3") {
    options.maxUdpPayload = shared.h3MaxUdpPayload;
    options.retry = o.h3Retry ?? false;
    options.exactEcn = o.h3ExactEcn ?? true;
    if (o.h3Io !== undefined) options.io = parseNativeIo(o.h3Io, "--h3-io");
  }
  if (o.io !== undefined && options.io === undefined) options.io = parseNativeIo(o.io, "--io");
  return options;
}

/**
 * `lab serve`: checks the options, starts a server per transport (every port
 * bound before the first listening line), and serves until SIGINT or SIGTERM.
 */
async function serve(o: ServeOptions): Promise<void> {
  const stack = asUsage(() => resolveStack(o.stack), "--stack");
  const transports = o.transports === undefined
    ? await availableTransports(stack)
    : asUsage(() => parseTransports(o.transports!), "--transports");
  if (o.transports === undefined && !transports.includes("h3")) {
    console.error(
      `h3 not served: the ${stack} stack's HTTP/3 module is not built (deno task build:native)`,
    );
  }
  if (o.io !== undefined) asUsage(() => parseNativeIo(o.io!, "--io"));
  const h2cPort = parsePort(o.h2cPort, "--h2c-port");
  const tlsPort = parsePort(o.tlsPort, "--tls-port");
  const delayMs = parseInteger(o.delayMs ?? "0", "--delay-ms");
  const h3MaxUdpPayload = o.h3MaxUdpPayload === undefined
    ? undefined
    : parseInteger(o.h3MaxUdpPayload, "--h3-max-udp-payload", { min: 1200, max: 65527 });
  if (h3MaxUdpPayload !== undefined && stack === "deno") {
    throw new UsageError(
      "--h3-max-udp-payload needs the native stack (Deno's QUIC does not let it be set)",
    );
  }
  const limits = serveLimits(o, transports);
  const exporter = o.export === undefined ? undefined : parseExport(o.export);
  if (exporter && stack === "deno") {
    throw new UsageError(
      "--export needs the native stack (Deno.serve exposes no TLS exporter)",
    );
  }
  const needsTls = transports.some((t) => t !== "h2c");
  const tls = needsTls ? await serverTls(o) : undefined;
  // One body limit: the transports refuse a larger body as it streams in with the
  // handler's own 413, and the handler checks the same number.
  const handler = serveHandler(o, delayMs, limits.maxBodyBytes);
  const servers: SbiServer[] = [];
  // SIGINT and SIGTERM are how a server is told to stop: drain, close, return, exit 0.
  // The watchdog ends the process (130, 143) if that takes longer than the stop bound,
  // or at a second signal, whatever the serving thread is doing.
  const stopped = Promise.withResolvers<void>();
  const stop = () => stopped.resolve();
  // Without FFI or Linux's libc there is no watchdog: the graceful stop alone remains.
  const watchdog = await startStopWatchdog(stopBoundMs(limits.drainMs)).catch((err) => {
    console.error(`warning: ${(err as Error).message}; a stop is not bounded`);
    return undefined;
  });
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  try {
    for (const t of transports) {
      const port = t === "h2c" ? h2cPort : tlsPort;
      const options = transportOptions(t, o, {
        stack,
        port,
        tls,
        limits,
        exporter,
        h3MaxUdpPayload,
      });
      const server = await createServer(t, handler, options).catch((err) => {
        throw bindError(err, o.host);
      });
      servers.push(server);
    }
    // every port is bound before the first "listening" line: a script waiting for one
    // never sees it from a server that then fails on the next port
    for (const [i, t] of transports.entries()) {
      console.log(listeningLine(t, servers[i].url));
      if (t === "h3") console.error(datagramLine(stack, h3MaxUdpPayload));
    }
    await stopped.promise;
  } finally {
    await Promise.allSettled(servers.map((s) => s.close()));
    Deno.removeSignalListener("SIGINT", stop);
    Deno.removeSignalListener("SIGTERM", stop);
    watchdog?.stop();
  }
}
