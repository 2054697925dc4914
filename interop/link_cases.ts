/**
 * The interop runner's impaired-path cases across the link emulator
 * (linkemu): the server runs in the link's server namespace, the client in
 * its client namespace, and the relay loses, holds back or rebinds packets
 * between them. Needs root; the link and everything in it is removed after
 * each case.
 */
import { hasNetAdmin, type LinkBackend, openLink, parseLinkSpec } from "../linkemu/mod.ts";
import { findTool } from "../lib/host.ts";
import { DEV_PKI_FILES, type DevPki, writeDevPki } from "../transports/pki.ts";
import { startLabServe } from "../lib/lab_serve.ts";
import type { MatrixRow } from "./row.ts";
import { gtlsPath, gtlsServerCommand, sbilabPath } from "./peers.ts";

/** Cases that run across a link with loss or blackholes (rebind-port also uses the link with our client). */
export const LINK_CASES: ReadonlySet<string> = new Set([
  "handshakeloss",
  "transferloss",
  "blackhole",
]);

const MiB = 1024 * 1024;
const PORT = 4433;
/** Handshake timeout on both sides: 30 % loss both ways can take several PTO rounds, each twice the last. */
const HANDSHAKE_TIMEOUT_S = 20;

/** The link each case needs and what crosses it (transfers kept short for CI). */
const PLANS: Record<string, { spec: string; sizes: number[]; connections: number; what: string }> =
  {
    handshakeloss: {
      spec: "loss=30%",
      sizes: [1024],
      connections: 5,
      what: "5 handshakes and 1 KiB each with 30 % loss both ways",
    },
    transferloss: {
      spec: "loss=2%",
      sizes: [2 * MiB],
      connections: 1,
      what: "2 MiB with 2 % loss both ways",
    },
    blackhole: {
      spec: "rate=10mbit,blackhole=5s/2s",
      sizes: [8 * MiB],
      connections: 1,
      what: "8 MiB at 10 Mbit/s through the runner's blackhole (5 s on, 2 s off)",
    },
    "rebind-port": {
      spec: "rate=20mbit",
      sizes: [4 * MiB],
      connections: 1,
      what: "4 MiB at 20 Mbit/s; the link's NAT moves the client to a new port after 1 MiB",
    },
  };

/** Why link cases cannot run here, or null. */
export function linkSkipReason(): string | null {
  if (Deno.build.os !== "linux") return "needs Linux network namespaces";
  if (!hasNetAdmin()) return "needs root (CAP_NET_ADMIN) for the link emulator's namespaces";
  return null;
}

/** Options for {@linkcode runLinkCase}. */
export interface LinkCaseOptions {
  server: "ours" | "gtlsserver";
  client: "ours" | "gtlsclient";
  pki: DevPki;
  /** Link backend. Default `relay`. */
  backend?: LinkBackend;
  /** Stack of our server. Default `native`. */
  stack?: "native" | "deno";
}

/** Runs one impaired-path case end to end; resolves with its matrix row. */
export async function runLinkCase(name: string, o: LinkCaseOptions): Promise<MatrixRow> {
  const plan = PLANS[name];
  if (!plan) throw new RangeError(`${name} is not a link case`);
  if (name === "rebind-port" && (o.backend ?? "relay") !== "relay") {
    return {
      name,
      status: "unsupported",
      reason: "NAT rebinding needs the relay backend",
    };
  }
  const dir = await Deno.makeTempDir({ prefix: "sbilab-interop-" });
  await writeDevPki(dir, o.pki);
  const key = `${dir}/${DEV_PKI_FILES.serverKey}`, cert = `${dir}/${DEV_PKI_FILES.serverCert}`;
  let link;
  try {
    link = await openLink(parseLinkSpec(plan.spec), { backend: o.backend });
  } catch (err) {
    await Deno.remove(dir, { recursive: true });
    const why = (err as Error).message.split("\n")[0];
    return { name, status: "unsupported", reason: `skipped: cannot build the link: ${why}` };
  }
  const signal = AbortSignal.timeout(90_000);
  try {
    const origin = `https://${link.serverAddr}:${PORT}`;
    if (o.server === "ours") {
      await startLabServe({
        transports: ["h3"],
        stack: o.stack,
        host: link.serverAddr,
        tlsPort: PORT,
        cert,
        key,
        limits: { handshakeTimeoutMs: HANDSHAKE_TIMEOUT_S * 1000 },
      }, {
        spawn: (argv) =>
          link.exec("server", argv, { stdin: "null", stdout: "piped", stderr: "piped", signal }),
      });
    } else {
      const [exe, args] = gtlsServerCommand(link.serverAddr, PORT, { key, cert }, [
        `--handshake-timeout=${HANDSHAKE_TIMEOUT_S}s`,
      ]);
      link.exec("server", [exe, ...args], {
        stdin: "null",
        stdout: "null",
        stderr: "null",
        signal,
      });
    }
    const pathFor = o.server === "ours" ? sbilabPath : gtlsPath;
    const paths = plan.sizes.map(pathFor);
    const rebind = name === "rebind-port" ? rebindAfter(link, MiB) : undefined;
    let result: { passed: boolean; detail: string };
    if (o.client === "ours") {
      const child = link.exec("client", [
        Deno.execPath(),
        "run",
        "-A",
        "--unstable-net",
        "--quiet",
        new URL("./_ns_client.ts", import.meta.url).pathname,
        origin,
        JSON.stringify({ paths, sizes: plan.sizes, connections: plan.connections }),
      ], { stdin: "null", stdout: "piped", stderr: "piped", signal });
      const out = await child.output();
      const text = new TextDecoder().decode(out.stdout).trim();
      try {
        result = JSON.parse(text.split("\n").pop() ?? "");
      } catch {
        const err = new TextDecoder().decode(out.stderr).trim().split("\n").pop();
        result = { passed: false, detail: `client exit ${out.code}: ${err ?? "no output"}` };
      }
    } else {
      result = { passed: true, detail: "" };
      for (let c = 0; c < plan.connections && result.passed; c++) {
        result = await gtlsclientIn(link, [...paths].map((p) => origin + p), plan.sizes, signal);
        if (!result.passed) result.detail = `connection ${c + 1}: ${result.detail}`;
      }
    }
    const epoch = rebind ? await rebind : undefined;
    if (rebind && !epoch) {
      result = {
        passed: false,
        detail: `the transfer ended before 1 MiB crossed; ${result.detail}`,
      };
    }
    const st = await link.stats();
    const drops = st
      ? `; link dropped ${st.up.dropLoss + st.down.dropLoss} lost, ${
        st.up.dropBlackhole + st.down.dropBlackhole
      } blackholed of ${st.up.in + st.down.in} packets`
      : "";
    return {
      name,
      status: result.passed ? "pass" : "fail",
      reason: `${o.client === "ours" ? "our client" : "gtlsclient"} → ${
        o.server === "ours" ? "our server" : "gtlsserver"
      }: ${result.passed ? plan.what : result.detail}${drops}`,
    };
  } catch (err) {
    return { name, status: "fail", reason: (err as Error).message.split("\n")[0] };
  } finally {
    await link.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Rebinds the link's NAT once `bytes` have crossed towards the client (bounded: 30 s). */
async function rebindAfter(
  link: Awaited<ReturnType<typeof openLink>>,
  bytes: number,
): Promise<number | undefined> {
  const end = performance.now() + 30_000;
  while (performance.now() < end) {
    const st = await link.stats();
    if (st && st.down.bytesOut >= bytes) return await link.rebind();
    await new Promise((r) => setTimeout(r, 50));
  }
  return undefined;
}

/** Runs gtlsclient in the link's client namespace for `urls`; checks the downloaded sizes. */
async function gtlsclientIn(
  link: Awaited<ReturnType<typeof openLink>>,
  urls: string[],
  sizes: number[],
  signal: AbortSignal,
): Promise<{ passed: boolean; detail: string }> {
  const exe = findTool("gtlsclient");
  if (!exe) throw new Error("gtlsclient not found: apt-get install ngtcp2-client");
  const dir = await Deno.makeTempDir({ prefix: "sbilab-interop-" });
  try {
    const host = link.serverAddr;
    const out = await link.exec("client", [
      exe,
      "-q",
      `--handshake-timeout=${HANDSHAKE_TIMEOUT_S}s`,
      "--exit-on-all-streams-close",
      "--download",
      dir,
      host,
      String(PORT),
      ...urls,
    ], { stdin: "null", stdout: "null", stderr: "piped", signal }).output();
    const got: number[] = [];
    for await (const e of Deno.readDir(dir)) got.push((await Deno.stat(`${dir}/${e.name}`)).size);
    got.sort((a, b) => a - b);
    const want = [...sizes].sort((a, b) => a - b);
    const ok = out.code === 0 && got.length === want.length && got.every((n, i) => n === want[i]);
    const tail = new TextDecoder().decode(out.stderr).trim().split("\n").pop() ?? "";
    return {
      passed: ok,
      detail: ok ? "" : `gtlsclient exit ${out.code}, files ${got.join(", ") || "none"} ${tail}`,
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
