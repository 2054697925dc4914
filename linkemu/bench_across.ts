/**
 * Runs a benchmark across an emulated link: `lab serve` in the server
 * namespace, `lab bench --target …` in the client namespace, the saved JSON
 * read back. This is how scenarios such as `hol` (concurrent requests on one
 * connection under loss) see a lossy, long link.
 *
 * @module
 */
import { DEV_PKI_FILES } from "../transports/pki.ts";
import { type LinkBackend, openLink } from "./link.ts";
import type { LinkSpec } from "./link_spec.ts";

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** Options for {@link benchAcrossLink}. */
export interface BenchAcrossOptions {
  /** Transport served and benchmarked: `h2c`, `h2-tls` or `h3`. Default `h2c`. */
  transport?: "h2c" | "h2-tls" | "h3";
  /** How to start `lab` (argv prefix). Default: this Deno running the repository's `main.ts`. */
  lab?: string[];
  /** Link backend. Default `relay`. */
  backend?: LinkBackend;
  /** Relay random seed. Default: the spec's, else 1. */
  seed?: number;
  /** Give up (and kill the benchmark) after this many ms. Default 600000. */
  timeoutMs?: number;
}

function defaultLab(): string[] {
  return [Deno.execPath(), "run", "-A", "--unstable-net", "--quiet", `${ROOT}/main.ts`];
}

/** Reads `stream` until every wanted transport printed `<t> listening on <url>`. */
async function readListening(
  stream: ReadableStream<Uint8Array>,
  want: string,
  ms: number,
): Promise<string> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)));
  try {
    for (;;) {
      const m = new RegExp(`^${want} listening on (\\S+)$`, "m").exec(buf);
      if (m) return m[1];
      const next = await Promise.race([reader.read(), timeout]);
      if (!next || next.done) throw new Error(`lab serve did not report ${want} listening`);
      buf += next.value;
    }
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}

/**
 * Opens a link for `spec`, serves one transport in its server namespace,
 * runs `lab bench <benchArgs> --target URL [--ca FILE] [--transports h3]
 * --json FILE` in its client namespace, and returns the parsed JSON run.
 * The link, the server and the temporary files are removed afterwards.
 */
export async function benchAcrossLink(
  spec: LinkSpec,
  benchArgs: string[],
  options: BenchAcrossOptions = {},
): Promise<unknown> {
  const transport = options.transport ?? "h2c";
  const lab = options.lab ?? defaultLab();
  const tmp = await Deno.makeTempDir({ prefix: "sbilab-bench-across-" });
  try {
    await using link = await openLink(spec, { backend: options.backend, seed: options.seed });
    const server = link.exec("server", [
      ...lab,
      "serve",
      "--transports",
      transport,
      "--host",
      link.serverAddr,
      "--h2c-port",
      "0",
      "--tls-port",
      "0",
      "--state-dir",
      tmp,
    ], { stdout: "piped", stderr: "null" });
    const url = await readListening(server.stdout, transport, 30000);
    const json = `${tmp}/run.json`;
    const args = [...benchArgs, "--target", url, "--json", json];
    if (transport !== "h2c") args.push("--ca", `${tmp}/${DEV_PKI_FILES.ca}`);
    if (transport === "h3") args.push("--transports", "h3");
    const bench = link.exec("client", [...lab, "bench", ...args], {
      stdout: "null",
      stderr: "piped",
    });
    const killer = setTimeout(() => bench.kill("SIGKILL"), options.timeoutMs ?? 600000);
    const out = await bench.output().finally(() => clearTimeout(killer));
    if (!out.success) {
      const lines = new TextDecoder().decode(out.stderr).trim().split("\n");
      throw new Error(`lab bench across the link failed: ${lines.at(-1) || `exit ${out.code}`}`);
    }
    return JSON.parse(await Deno.readTextFile(json));
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}
