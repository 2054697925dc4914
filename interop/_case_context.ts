/**
 * What every interop case shares: the matrix's options, one pairing's
 * context, the cases no pairing (or the deno stack's server) can run, our
 * server on the pairing's stack, and a check's result as a matrix row.
 */
import type { LinkBackend } from "../linkemu/mod.ts";
import type { DevPki } from "../transports/pki.ts";
import type { H3ServerOptions } from "../transports/h3/server.ts";
import { type ServerPeer, startOurQuinnServer, startOurServer } from "./peers.ts";
import type { MatrixRow } from "./row.ts";

/** Options of the interop matrix (`runInterop` in `matrix.ts`). */
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
export const UNSUPPORTED: Readonly<Record<string, string>> = {
  v2:
    "QUIC v2 (RFC 9369, 0x6b3343cf) is not in ngtcp2 0.12.1, which knows only the provisional draft 0x709a50c4",
  handshakecorruption:
    "the link emulator (linkemu) loses, delays and reorders packets but does not corrupt them",
  transfercorruption:
    "the link emulator (linkemu) loses, delays and reorders packets but does not corrupt them",
  amplificationlimit:
    "needs a capture of the server's first flight against a client that stops acknowledging; neither peer exposes one",
};

/** One mebibyte. */
export const MiB = 1024 * 1024;

/** Cases our server cannot run on the deno stack, with the reason (what Deno's QUIC lacks). */
const DENO_SERVER_UNSUPPORTED: Readonly<Record<string, string>> = {
  retry: "Deno's QUIC (quinn) offers no option to send a Retry",
  resumption: "Deno's QUIC shows no TLS session state, so a resumed handshake cannot be observed",
  zerortt: "Deno's QUIC shows no TLS session state, so accepted 0-RTT cannot be observed",
  ecn: "Deno's QUIC shows no ECN counts",
};

/** The deno stack's reason a case cannot run, or undefined. */
export function denoUnsupported(ctx: Ctx, name: string): MatrixRow | undefined {
  if (ctx.options.stack !== "deno" || ctx.server !== "ours") return undefined;
  const reason = DENO_SERVER_UNSUPPORTED[name];
  return reason ? { name, status: "unsupported", reason } : undefined;
}

/** Our server on the stack of `ctx`. */
export function ourServer(ctx: Ctx, options: Omit<H3ServerOptions, "tls">): Promise<ServerPeer> {
  return ctx.options.stack === "deno"
    ? startOurQuinnServer(ctx.pki)
    : startOurServer(ctx.pki, options);
}

/** One pairing's context, shared by the checks. */
export interface Ctx {
  pki: DevPki;
  options: InteropOptions;
  /** `ours`, `gtlsserver` or a URL. */
  server: string;
}

/** A check's result as a matrix row. */
export function row(name: string, r: { passed: boolean; detail: string }): MatrixRow {
  return { name, status: r.passed ? "pass" : "fail", reason: r.detail };
}
