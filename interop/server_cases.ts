/**
 * The matrix's server mode: our h3 client against a server (ours,
 * `gtlsserver`, or any URL), one case at a time.
 */
import { TicketCache } from "../transports/ticket_cache.ts";
import { createNativeH3Client } from "../transports/h3/client.ts";
import type { H3ServerOptions } from "../transports/h3/server.ts";
import {
  type CaseResult,
  checkInvalidTransportParameter,
  checkKeyUpdate,
  checkRetry,
  INVALID_TRANSPORT_PARAMETERS,
} from "./mod.ts";
import { CHACHA20_ONLY, type ServerPeer, startGtlsServer } from "./peers.ts";
import { LINK_CASES, linkSkipReason, runLinkCase } from "./link_cases.ts";
import type { MatrixRow } from "./row.ts";
import { type Ctx, denoUnsupported, MiB, ourServer, row, UNSUPPORTED } from "./_case_context.ts";

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

/**
 * The row of a case our client cannot run against the server in `ctx`
 * (unsupported here, on the deno stack, or by our client), or undefined.
 */
function serverCaseUnrunnable(ctx: Ctx, name: string): MatrixRow | undefined {
  if (UNSUPPORTED[name]) return { name, status: "unsupported", reason: UNSUPPORTED[name] };
  const deno = denoUnsupported(ctx, name);
  if (deno) return deno;
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
  return undefined;
}

/** One case with our client against the server in `ctx`. */
export async function serverCase(ctx: Ctx, name: string): Promise<MatrixRow> {
  const unrunnable = serverCaseUnrunnable(ctx, name);
  if (unrunnable) return unrunnable;
  const foreign = ctx.server !== "ours" && ctx.server !== "gtlsserver";
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
    return await peerCase(peer, name);
  } catch (err) {
    return { name, status: "fail", reason: (err as Error).message.split("\n")[0] };
  } finally {
    await peer.close();
  }
}

/** One case of our client against a started server. */
async function peerCase(peer: ServerPeer, name: string): Promise<MatrixRow> {
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
    case "chacha20":
      return await checkChacha20(peer);
    case "ecn":
      return await checkEcn(peer);
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
}

/** The runner's "chacha20": 1 MiB over a connection whose suite is ChaCha20-Poly1305. */
async function checkChacha20(peer: ServerPeer): Promise<MatrixRow> {
  const name = "chacha20";
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

/** The runner's "ecn": both sides keep marking past ngtcp2's test datagrams. */
async function checkEcn(peer: ServerPeer): Promise<MatrixRow> {
  const name = "ecn";
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
      detail: `client marked ${st.ecnSent}/${st.datagramsSent}, received ${st.ecnReceived} marked` +
        (theirs ? `; server marked ${theirs.ecnSent}/${theirs.datagramsSent}` : "") +
        (ours && server
          ? " (marking went on: the peer's ACK_ECN counts validated it)"
          : " (marking stopped after the 10 test datagrams: the peer's ACK_ECN counts failed validation)"),
    });
  } finally {
    await client.close();
  }
}
