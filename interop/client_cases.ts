/** The matrix's client mode: `gtlsclient` against our server, one case at a time. */
import { createHandler } from "../handler/mod.ts";
import { createNativeH3Server } from "../transports/h3/server.ts";
import { CHACHA20_ONLY, runGtlsClient, sbilabPath, type ServerPeer } from "./peers.ts";
import { LINK_CASES, linkSkipReason, runLinkCase } from "./link_cases.ts";
import type { MatrixRow } from "./row.ts";
import { type Ctx, denoUnsupported, MiB, ourServer, row, UNSUPPORTED } from "./_case_context.ts";

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

/** gtlsclient's run judged by the sizes it downloaded. */
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

/** The row of a case gtlsclient 0.12.1 cannot run, or undefined. */
function gtlsUnrunnable(name: string): MatrixRow | undefined {
  if (name === "rebind-addr") {
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
  return undefined;
}

/** One case with gtlsclient against our server. */
export async function clientCase(ctx: Ctx, name: string): Promise<MatrixRow> {
  if (UNSUPPORTED[name]) return { name, status: "unsupported", reason: UNSUPPORTED[name] };
  const deno = denoUnsupported({ ...ctx, server: "ours" }, name);
  if (deno) return deno;
  if (name === "resumption" || name === "zerortt") {
    return await gtlsResumption(ctx, name === "zerortt");
  }
  const unrunnable = gtlsUnrunnable(name);
  if (unrunnable) return unrunnable;
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
  try {
    return await gtlsCase(peer, name);
  } catch (err) {
    if (err instanceof RangeError) throw err;
    return { name, status: "fail", reason: (err as Error).message.split("\n")[0] };
  } finally {
    await peer.close();
  }
}

/** One case of gtlsclient against our started server. */
async function gtlsCase(peer: ServerPeer, name: string): Promise<MatrixRow> {
  const url = (n: number) => `${peer.origin}${peer.pathFor(n)}`;
  const run = (sizes: number[], flags?: string[]) =>
    runGtlsClient(peer.host, peer.port, sizes.map(url), { flags });
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
}
