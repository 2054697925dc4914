/**
 * The QUIC interop runner's matrix (quic-interop/quic-interop-runner,
 * testcases.py) for one pairing: our h3 client against a server (ours,
 * `gtlsserver`, or any URL), or `gtlsclient` against our server. Every case
 * ends as pass, fail or unsupported with a one-line reason; cases that need
 * an impaired path run across the link emulator (see `link_cases.ts`).
 */
import type { LinkBackend } from "../linkemu/mod.ts";
import { createDevPki, type DevPki } from "../transports/pki.ts";
import { createHandler } from "../handler/mod.ts";
import { TicketCache } from "../transports/ticket_cache.ts";
import { createNativeH3Client } from "../transports/h3/client.ts";
import { createNativeH3Server, type H3ServerOptions } from "../transports/h3/server.ts";
import {
  type CaseResult,
  checkInvalidTransportParameter,
  checkKeyUpdate,
  checkRetry,
  INVALID_TRANSPORT_PARAMETERS,
} from "./mod.ts";
import {
  CHACHA20_ONLY,
  runGtlsClient,
  sbilabPath,
  type ServerPeer,
  startGtlsServer,
  startOurQuinnServer,
  startOurServer,
} from "./peers.ts";
import { LINK_CASES, linkSkipReason, runLinkCase } from "./link_cases.ts";
import type { CaseStatus, MatrixRow } from "./row.ts";

export type { CaseStatus, MatrixRow };

/** Every case `lab interop` knows, in the runner's order. */
export const INTEROP_CASES: readonly string[] = [
  "handshake",
  "transfer",
  "multiplexing",
  "retry",
  "resumption",
  "zerortt",
  "http3",
  "chacha20",
  "keyupdate",
  "ecn",
  "v2",
  "multiconnect",
  "versionnegotiation",
  ...INVALID_TRANSPORT_PARAMETERS.map((p) => `transportparameters:${p}`),
  "handshakeloss",
  "transferloss",
  "blackhole",
  "handshakecorruption",
  "transfercorruption",
  "amplificationlimit",
  "rebind-port",
  "rebind-addr",
  "connectionmigration",
];

/** Options for {@linkcode runInterop}. */
export interface InteropOptions {
  /**
   * The server our client tests: `ours` (started here), `gtlsserver`
   * (started here, with the flags each case needs) or an `https://` URL
   * (used as it is). Ignored with `client`. Default `ours`.
   */
  server?: string;
  /** Run `gtlsclient` against our server instead. Default false. */
  client?: boolean;
  /** The cases to run, from {@linkcode INTEROP_CASES}. Default all. */
  cases?: readonly string[];
  /** Link emulator backend for the impaired-path cases (`relay` or `netem`). Default `relay`. */
  linkBackend?: LinkBackend;
  /** The stack of "our server": `native` (ngtcp2) or `deno` (Deno's QUIC, quinn). Default `native`. */
  stack?: "native" | "deno";
  /** Called with each row as it is decided. */
  onRow?: (row: MatrixRow) => void;
}

/** Cases no pairing can run here, with the reason (a library limit names its version). */
const UNSUPPORTED: Readonly<Record<string, string>> = {
  v2:
    "QUIC v2 (RFC 9369, 0x6b3343cf) is not in ngtcp2 0.12.1, which knows only the provisional draft 0x709a50c4",
  handshakecorruption:
    "the link emulator (linkemu) loses, delays and reorders packets but does not corrupt them",
  transfercorruption:
    "the link emulator (linkemu) loses, delays and reorders packets but does not corrupt them",
  amplificationlimit:
    "needs a capture of the server's first flight against a client that stops acknowledging; neither peer exposes one",
};

const MiB = 1024 * 1024;

/** Cases our server cannot run on the deno stack, with the reason (what Deno's QUIC lacks). */
const DENO_SERVER_UNSUPPORTED: Readonly<Record<string, string>> = {
  retry: "Deno's QUIC (quinn) offers no option to send a Retry",
  resumption: "Deno's QUIC shows no TLS session state, so a resumed handshake cannot be observed",
  zerortt: "Deno's QUIC shows no TLS session state, so accepted 0-RTT cannot be observed",
  ecn: "Deno's QUIC shows no ECN counts",
};

/** The deno stack's reason a case cannot run, or undefined. */
function denoUnsupported(ctx: Ctx, name: string): MatrixRow | undefined {
  if (ctx.options.stack !== "deno" || ctx.server !== "ours") return undefined;
  const reason = DENO_SERVER_UNSUPPORTED[name];
  return reason ? { name, status: "unsupported", reason } : undefined;
}

/** Our server on the stack of `ctx`. */
function ourServer(ctx: Ctx, options: Omit<H3ServerOptions, "tls">): Promise<ServerPeer> {
  return ctx.options.stack === "deno"
    ? startOurQuinnServer(ctx.pki)
    : startOurServer(ctx.pki, options);
}

/** One pairing's context, shared by the checks. */
interface Ctx {
  pki: DevPki;
  options: InteropOptions;
  /** `ours`, `gtlsserver` or a URL. */
  server: string;
}

/** Starts the server for one case (`variant` picks flags where the server is ours to start). */
async function serverFor(
  ctx: Ctx,
  variant: "plain" | "retry" | "chacha20" | "ecn",
): Promise<ServerPeer> {
  if (ctx.server === "ours") {
    const options: Omit<H3ServerOptions, "tls"> = variant === "retry"
      ? { retry: true }
      : variant === "ecn"
      ? { exactEcn: true }
      : {};
    return await ourServer(ctx, options);
  }
  if (ctx.server === "gtlsserver") {
    const flags = variant === "retry"
      ? ["-V"]
      : variant === "chacha20"
      ? [`--ciphers=${CHACHA20_ONLY}`]
      : [];
    return await startGtlsServer(ctx.pki, { extra: flags });
  }
  const url = new URL(ctx.server);
  const port = Number(url.port || 443);
  const base = url.pathname.replace(/\/$/, "");
  return {
    origin: url.origin,
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port,
    // A foreign server is assumed to serve `size` bytes at `<path>/<size>`, as gtlsserver does.
    pathFor: (n) => `${base}/${n}`,
    datagramStats: () => undefined,
    close: () => Promise.resolve(),
  };
}

function row(name: string, r: { passed: boolean; detail: string }): MatrixRow {
  return { name, status: r.passed ? "pass" : "fail", reason: r.detail };
}

/** Our client requests `sizes` on `connections` connections in turn, all of a connection's at once. */
async function fetchSizes(
  peer: ServerPeer,
  sizes: number[],
  connections = 1,
): Promise<CaseResult & { client?: Awaited<ReturnType<typeof createNativeH3Client>> }> {
  let got: number[] = [];
  for (let c = 0; c < connections; c++) {
    const client = await createNativeH3Client(peer.origin, {
      tls: { insecure: true },
      timeoutMs: 20_000,
    });
    try {
      const res = await Promise.all(sizes.map((n) => client.request({ path: peer.pathFor(n) })));
      got = res.map((r) => (r.status === 200 ? r.body.length : -r.status));
      if (got.some((n, i) => n !== sizes[i])) {
        return {
          name: "",
          passed: false,
          detail: `connection ${c + 1}: got ${got.join(", ")} for ${sizes.join(", ")} bytes`,
        };
      }
    } catch (err) {
      return { name: "", passed: false, detail: `connection ${c + 1}: ${(err as Error).message}` };
    } finally {
      await client.close();
    }
  }
  return { name: "", passed: true, detail: "" };
}

/** Sends one long-header packet of an unknown version; resolves with the versions a VN lists. */
export async function probeVersionNegotiation(
  host: string,
  port: number,
  timeoutMs = 2000,
): Promise<number[] | undefined> {
  const sock = Deno.listenDatagram({ transport: "udp", hostname: "0.0.0.0", port: 0 });
  try {
    const pkt = new Uint8Array(1200);
    const dcid = crypto.getRandomValues(new Uint8Array(8));
    const scid = crypto.getRandomValues(new Uint8Array(8));
    pkt[0] = 0xc0;
    new DataView(pkt.buffer).setUint32(1, 0x1a2a3a4a); // reserved for forcing VN (RFC 9000 §15)
    pkt[5] = 8;
    pkt.set(dcid, 6);
    pkt[14] = 8;
    pkt.set(scid, 15);
    await sock.send(pkt, { transport: "udp", hostname: host, port });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const got = await Promise.race([
      sock.receive(),
      new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), timeoutMs))),
    ]).finally(() => clearTimeout(timer));
    if (!got) return undefined;
    const d = got[0];
    const view = new DataView(d.buffer, d.byteOffset, d.byteLength);
    if (d.length < 7 || !(d[0] & 0x80) || view.getUint32(1) !== 0) return undefined;
    const dl = d[5], sl = d[6 + dl];
    // A VN echoes our SCID as its DCID.
    if (dl !== 8 || d.subarray(6, 14).some((b, i) => b !== scid[i])) return undefined;
    const versions: number[] = [];
    for (let at = 7 + dl + sl; at + 4 <= d.length; at += 4) versions.push(view.getUint32(at));
    return versions;
  } finally {
    sock.close();
  }
}

function hex(v: number): string {
  return `0x${v.toString(16).padStart(8, "0")}`;
}

/**
 * The runner's "resumption" (and "zerortt" when `early`): a first connection
 * gets a ticket, a second resumes with it (and sends its GET in 0-RTT).
 */
async function checkResumption(peer: ServerPeer, early: boolean): Promise<CaseResult> {
  const name = early ? "zerortt" : "resumption";
  const cache = new TicketCache();
  const open = () =>
    createNativeH3Client(peer.origin, {
      tls: { insecure: true },
      timeoutMs: 10_000,
      ticketCache: cache,
      earlyData: early,
    });
  const first = await open();
  try {
    await first.request({ path: peer.pathFor(1024) });
  } finally {
    await first.close();
  }
  if (cache.size === 0) return { name, passed: false, detail: "the server sent no session ticket" };
  const second = await open();
  try {
    const res = await second.request({ path: peer.pathFor(16 * 1024) });
    const tls = second.tlsInfo();
    const passed = res.body.length === 16 * 1024 && tls?.resumed === true &&
      (!early || tls.earlyData === "accepted");
    return {
      name,
      passed,
      detail: `second connection ${tls?.resumed ? "resumed" : "not resumed"}, 0-RTT ${
        tls?.earlyData ?? "none"
      }, ${res.body.length} bytes`,
    };
  } finally {
    await second.close();
  }
}

/** gtlsclient twice against our server with a session file: the second resumes (and sends 0-RTT). */
async function gtlsResumption(ctx: Ctx, early: boolean): Promise<MatrixRow> {
  const name = early ? "zerortt" : "resumption";
  const resumed: boolean[] = [];
  const server = await createNativeH3Server(createHandler(), {
    tls: { cert: ctx.pki.serverCertPem, key: ctx.pki.serverKeyPem },
    onTls: (c) => resumed.push(c.info().resumed),
  });
  const dir = await Deno.makeTempDir({ prefix: "sbilab-interop-" });
  try {
    const files = [`--session-file=${dir}/session.pem`, `--tp-file=${dir}/tp.txt`];
    const url = `${server.url}${sbilabPath(1024)}`;
    const first = await runGtlsClient("127.0.0.1", server.port, [url], {
      flags: ["-q", ...files],
    });
    if (first.code !== 0) {
      return { name, status: "fail", reason: `first gtlsclient run exit ${first.code}` };
    }
    const second = await runGtlsClient("127.0.0.1", server.port, [url], {
      flags: ["--no-http-dump", ...files, ...(early ? [] : ["--disable-early-data"])],
    });
    const zeroRtt = /type=0RTT/.test(second.stderr);
    const got = [...second.files.values()];
    const early2 = server.earlyRequests();
    const passed = second.code === 0 && got[0] === 1024 && resumed.length === 2 && resumed[1] &&
      (early ? zeroRtt && early2.received === 1 && early2.tooEarly === 0 : !zeroRtt);
    return row(name, {
      passed,
      detail: `second gtlsclient connection ${resumed[1] ? "resumed" : "not resumed"}, ${
        zeroRtt ? `sent 0-RTT, ${early2.received} early request(s) answered` : "no 0-RTT"
      }, ${got[0] ?? 0} bytes`,
    });
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** One case with our client against the server in `ctx`. */
async function serverCase(ctx: Ctx, name: string): Promise<MatrixRow> {
  if (UNSUPPORTED[name]) return { name, status: "unsupported", reason: UNSUPPORTED[name] };
  const deno = denoUnsupported(ctx, name);
  if (deno) return deno;
  const foreign = ctx.server !== "ours" && ctx.server !== "gtlsserver";
  switch (name) {
    case "rebind-addr":
      return {
        name,
        status: "unsupported",
        reason: "the link emulator's NAT rebinding moves ports only, not addresses",
      };
    case "connectionmigration":
      return {
        name,
        status: "unsupported",
        reason: "our h3 client cannot migrate (no active migration or preferred_address use)",
      };
    case "chacha20":
      if (ctx.server !== "gtlsserver") {
        return {
          name,
          status: "unsupported",
          reason:
            "our client has no cipher option (it offers AES-128-GCM first); runs against gtlsserver limited to ChaCha20",
        };
      }
  }
  if (LINK_CASES.has(name) || name === "rebind-port") {
    if (foreign) {
      return {
        name,
        status: "unsupported",
        reason: "needs a server this command starts (ours or gtlsserver) in the link's namespace",
      };
    }
    const skip = linkSkipReason();
    if (skip) return { name, status: "unsupported", reason: `skipped: ${skip}` };
    return await runLinkCase(name, {
      server: ctx.server as "ours" | "gtlsserver",
      client: "ours",
      pki: ctx.pki,
      backend: ctx.options.linkBackend,
      stack: ctx.options.stack,
    });
  }
  const variant = name === "retry" || name === "chacha20" || name === "ecn" ? name : "plain";
  const peer = await serverFor(ctx, variant);
  try {
    switch (name) {
      case "handshake": {
        const r = await fetchSizes(peer, [1024]);
        return row(name, { ...r, detail: r.passed ? "1 KiB over a fresh connection" : r.detail });
      }
      case "transfer": {
        const r = await fetchSizes(peer, [MiB, 3 * MiB, 5 * MiB]);
        return row(name, {
          ...r,
          detail: r.passed ? "1, 3 and 5 MiB at once on one connection" : r.detail,
        });
      }
      case "multiplexing": {
        const sizes = Array.from({ length: 1000 }, () => 32);
        const r = await fetchSizes(peer, sizes);
        return row(name, {
          ...r,
          detail: r.passed ? "1000 streams of 32 B on one connection" : r.detail,
        });
      }
      case "http3": {
        const r = await fetchSizes(peer, [1024, 16 * 1024, MiB]);
        return row(name, {
          ...r,
          detail: r.passed ? "3 HTTP/3 GETs (1 KiB, 16 KiB, 1 MiB) at once" : r.detail,
        });
      }
      case "multiconnect": {
        const r = await fetchSizes(peer, [1024], 10);
        return row(name, {
          ...r,
          detail: r.passed ? "10 connections in turn, 1 KiB each" : r.detail,
        });
      }
      case "retry":
        return row(name, await checkRetry({ origin: peer.origin, pathFor: peer.pathFor }));
      case "resumption":
      case "zerortt":
        return row(name, await checkResumption(peer, name === "zerortt"));
      case "keyupdate":
        return row(name, await checkKeyUpdate({ origin: peer.origin, pathFor: peer.pathFor }));
      case "chacha20": {
        const client = await createNativeH3Client(peer.origin, {
          tls: { insecure: true },
          timeoutMs: 10_000,
        });
        try {
          const res = await client.request({ path: peer.pathFor(MiB) });
          const suite = client.connectionInfo?.()?.tls?.suite ?? "unknown";
          return row(name, {
            passed: res.body.length === MiB && /CHACHA20/i.test(suite),
            detail: `${res.body.length} bytes with ${suite}`,
          });
        } finally {
          await client.close();
        }
      }
      case "ecn": {
        // ACK_ECN counts every mark only when every datagram is read with its TOS byte.
        const client = await createNativeH3Client(peer.origin, {
          tls: { insecure: true },
          timeoutMs: 10_000,
          exactEcn: true,
        });
        try {
          for (let i = 0; i < 4; i++) await client.request({ path: peer.pathFor(MiB) });
          const st = client.datagramStats()!;
          const theirs = peer.datagramStats();
          // Our marks continue past ngtcp2's 10 test datagrams only once the peer's ACK_ECN counts validate them.
          const ours = st.ecnSent > 0.9 * st.datagramsSent;
          const server = theirs ? theirs.ecnSent > 0.9 * theirs.datagramsSent : true;
          return row(name, {
            passed: ours && server,
            detail:
              `client marked ${st.ecnSent}/${st.datagramsSent}, received ${st.ecnReceived} marked` +
              (theirs ? `; server marked ${theirs.ecnSent}/${theirs.datagramsSent}` : "") +
              (ours && server
                ? " (marking went on: the peer's ACK_ECN counts validated it)"
                : " (marking stopped after the 10 test datagrams: the peer's ACK_ECN counts failed validation)"),
          });
        } finally {
          await client.close();
        }
      }
      case "versionnegotiation": {
        const versions = await probeVersionNegotiation(peer.host, peer.port);
        return row(name, {
          passed: versions?.includes(1) ?? false,
          detail: versions
            ? `Version Negotiation for 0x1a2a3a4a lists ${versions.map(hex).join(", ")}`
            : "no Version Negotiation within 2 s for version 0x1a2a3a4a",
        });
      }
      default: {
        const tp = /^transportparameters:(.+)$/.exec(name)?.[1];
        if (tp) {
          const r = await checkInvalidTransportParameter(
            peer.host,
            peer.port,
            tp as (typeof INVALID_TRANSPORT_PARAMETERS)[number],
          );
          return row(name, r);
        }
        throw new RangeError(`Unknown case ${name}`);
      }
    }
  } catch (err) {
    return { name, status: "fail", reason: (err as Error).message.split("\n")[0] };
  } finally {
    await peer.close();
  }
}

function sizesOk(
  run: { code: number; files: Map<string, number>; stderr: string },
  want: number[],
) {
  const got = [...run.files.values()].sort((a, b) => a - b);
  const sorted = [...want].sort((a, b) => a - b);
  const ok = run.code === 0 && got.length === sorted.length && got.every((n, i) => n === sorted[i]);
  const tail = run.stderr.trim().split("\n").pop() ?? "";
  return {
    passed: ok,
    detail: ok
      ? `gtlsclient downloaded ${sorted.join(", ")} bytes`
      : `gtlsclient exit ${run.code}, files ${got.join(", ") || "none"}${tail ? `: ${tail}` : ""}`,
  };
}

/** One case with gtlsclient against our server. */
async function clientCase(ctx: Ctx, name: string): Promise<MatrixRow> {
  if (UNSUPPORTED[name]) return { name, status: "unsupported", reason: UNSUPPORTED[name] };
  const deno = denoUnsupported({ ...ctx, server: "ours" }, name);
  if (deno) return deno;
  switch (name) {
    case "resumption":
    case "zerortt":
      return await gtlsResumption(ctx, name === "zerortt");
    case "rebind-addr":
      return {
        name,
        status: "unsupported",
        reason:
          "gtlsclient 0.12.1 rebinds to a new port on the same address; the link emulator moves ports only",
      };
  }
  if (name.startsWith("transportparameters:")) {
    return {
      name,
      status: "unsupported",
      reason:
        "gtlsclient 0.12.1 cannot send invalid transport parameters (server mode runs them with a probe)",
    };
  }
  // rebind-port runs across the link's NAT: gtlsclient 0.12.1's own --nat-rebinding stalls
  // against gtlsserver too.
  if (LINK_CASES.has(name) || name === "rebind-port") {
    const skip = linkSkipReason();
    if (skip) return { name, status: "unsupported", reason: `skipped: ${skip}` };
    return await runLinkCase(name, {
      server: "ours",
      client: "gtlsclient",
      pki: ctx.pki,
      backend: ctx.options.linkBackend,
      stack: ctx.options.stack,
    });
  }
  const peer = await ourServer(
    ctx,
    name === "retry" ? { retry: true } : name === "ecn" ? { exactEcn: true } : {},
  );
  const url = (n: number) => `${peer.origin}${peer.pathFor(n)}`;
  const run = (sizes: number[], flags?: string[]) =>
    runGtlsClient(peer.host, peer.port, sizes.map(url), { flags });
  try {
    switch (name) {
      case "handshake":
        return row(name, sizesOk(await run([1024]), [1024]));
      case "transfer":
        return row(name, sizesOk(await run([MiB, 3 * MiB, 5 * MiB]), [MiB, 3 * MiB, 5 * MiB]));
      case "http3":
        return row(name, sizesOk(await run([1024, 16 * 1024, MiB]), [1024, 16 * 1024, MiB]));
      case "multiplexing": {
        // Distinct sizes give distinct file names, so every stream's download is checked.
        const sizes = Array.from({ length: 1000 }, (_, i) => 32 + i);
        const r = sizesOk(await run(sizes), sizes);
        return row(name, {
          ...r,
          detail: r.passed ? "gtlsclient fetched 1000 streams on one connection" : r.detail,
        });
      }
      case "multiconnect": {
        for (let i = 0; i < 10; i++) {
          const r = sizesOk(await run([1024]), [1024]);
          if (!r.passed) return row(name, { ...r, detail: `connection ${i + 1}: ${r.detail}` });
        }
        return row(name, { passed: true, detail: "10 gtlsclient connections in turn, 1 KiB each" });
      }
      case "retry": {
        const r = sizesOk(await run([16 * 1024]), [16 * 1024]);
        const st = peer.datagramStats()!;
        return row(name, {
          passed: r.passed && st.retries === 1,
          detail: `${r.detail}; server sent ${st.retries} Retry, ${st.newTokens} NEW_TOKEN`,
        });
      }
      case "keyupdate": {
        const r = sizesOk(await run([16 * MiB], ["-q", "--key-update=1ms"]), [16 * MiB]);
        const st = peer.datagramStats()!;
        return row(name, {
          passed: r.passed && st.keyUpdates >= 1,
          detail: `${r.detail}; server saw ${st.keyUpdates} key update(s)`,
        });
      }
      case "ecn": {
        const r = sizesOk(await run([4 * MiB]), [4 * MiB]);
        const st = peer.datagramStats()!;
        return row(name, {
          passed: r.passed && st.ecnSent > 0.9 * st.datagramsSent,
          detail:
            `${r.detail}; server marked ${st.ecnSent}/${st.datagramsSent} (validated by gtlsclient), received ${st.ecnReceived} marked`,
        });
      }
      case "chacha20": {
        const flags = ["--no-quic-dump", "--no-http-dump", `--ciphers=${CHACHA20_ONLY}`];
        const res = await runGtlsClient(peer.host, peer.port, [url(64 * 1024)], { flags });
        const suite = /Negotiated cipher suite is (\S+)/.exec(res.stderr)?.[1];
        const r = sizesOk(res, [64 * 1024]);
        return row(name, {
          passed: r.passed && /CHACHA20/.test(suite ?? ""),
          detail: `${r.detail} with ${suite ?? "an unreported suite"}`,
        });
      }
      case "connectionmigration": {
        const flags = ["-q", "--change-local-addr=50ms"];
        const r = sizesOk(await run([8 * MiB], flags), [8 * MiB]);
        return row(name, {
          ...r,
          detail:
            `${r.detail}; gtlsclient moved to a new port 50 ms after the handshake and validated the path`,
        });
      }
      case "versionnegotiation": {
        const res = await runGtlsClient(peer.host, peer.port, [url(1024)], {
          flags: ["--no-quic-dump", "--no-http-dump", "-v", "0x1a2a3a4a"],
        });
        const vn = /version=0x00000000 type=VN/.test(res.stderr) &&
          /ERR_RECV_VERSION_NEGOTIATION/.test(res.stderr);
        return row(name, {
          passed: vn,
          detail: vn
            ? "our server answered 0x1a2a3a4a with Version Negotiation; gtlsclient 0.12.1 stops there (it does not reconnect with v1)"
            : `no Version Negotiation seen by gtlsclient (exit ${res.code})`,
        });
      }
      default:
        throw new RangeError(`Unknown case ${name}`);
    }
  } catch (err) {
    if (err instanceof RangeError) throw err;
    return { name, status: "fail", reason: (err as Error).message.split("\n")[0] };
  } finally {
    await peer.close();
  }
}

/**
 * Runs the chosen cases in turn and resolves with the matrix.
 * @throws {RangeError} for an unknown case name
 */
export async function runInterop(options: InteropOptions = {}): Promise<MatrixRow[]> {
  const cases = options.cases ?? INTEROP_CASES;
  for (const c of cases) {
    if (!INTEROP_CASES.includes(c)) {
      throw new RangeError(`Unknown case ${c} (known: ${INTEROP_CASES.join(", ")})`);
    }
  }
  const ctx: Ctx = { pki: await createDevPki(), options, server: options.server ?? "ours" };
  const rows: MatrixRow[] = [];
  for (const name of cases) {
    let r: MatrixRow;
    try {
      r = options.client ? await clientCase(ctx, name) : await serverCase(ctx, name);
    } catch (err) {
      if (err instanceof RangeError) throw err;
      r = { name, status: "fail", reason: (err as Error).message.split("\n")[0] };
    }
    rows.push(r);
    options.onRow?.(r);
  }
  return rows;
}

/** One matrix line: the case, its status, the reason. */
export function formatRow(r: MatrixRow): string {
  return `${r.name.padEnd(47)} ${r.status.padEnd(11)} ${r.reason}`;
}

/** True when no supported case failed. */
export function matrixPassed(rows: readonly MatrixRow[]): boolean {
  return rows.every((r) => r.status !== "fail");
}
