/** `lab interop`: the QUIC interop runner's cases for our HTTP/3, printed as the runner's matrix. */
import type { Command } from "commander";
import type { LinkBackend } from "../linkemu/mod.ts";
import {
  formatRow,
  INTEROP_CASES,
  matrixPassed,
  type MatrixRow,
  runInterop,
} from "../interop/matrix.ts";
import { exclusive, invalid, parseChoice, parseList } from "./args.ts";
import { createProgress } from "./progress.ts";

interface InteropCliOptions {
  server?: string;
  client?: boolean;
  cases?: string;
  linkBackend: string;
  stack: string;
  json?: string;
  quiet?: boolean;
}

/** Link backends that impair packets (`veth` does not). */
const BACKENDS = ["relay", "netem"];

/** Registers `lab interop`. */
export function registerInteropCommand(program: Command): void {
  program.command("interop")
    .description(
      "run the QUIC interop runner's test cases against an HTTP/3 server (ours by default) or with gtlsclient against ours, and print the matrix",
    )
    .option(
      "--server <url>",
      "server for our h3 client: ours (default, started on loopback), gtlsserver (started here), or an https:// URL serving N bytes at /N",
    )
    .option("--client", "run ngtcp2's gtlsclient against our server instead")
    .option("--cases <list>", `comma-separated cases (default all): ${INTEROP_CASES.join(", ")}`)
    .option(
      "--link-backend <backend>",
      "link emulator for the loss/blackhole/rebind cases: relay or netem",
      "relay",
    )
    .option(
      "--stack <stack>",
      "our server's stack: native (ngtcp2, GnuTLS; default) or deno (Deno's QUIC: quinn, rustls; cases it cannot do are unsupported)",
      "native",
    )
    .option("--json <file>", "also write the matrix as JSON to FILE")
    .option("-q, --quiet", "no progress: lines on stderr when it is not a terminal")
    .action(async (o: InteropCliOptions) => {
      if (o.server !== undefined && o.client) throw exclusive("--server", "--client");
      if (o.server !== undefined && o.server !== "ours" && o.server !== "gtlsserver") {
        let scheme: string | undefined;
        try {
          scheme = new URL(o.server).protocol;
        } catch { /* not a URL */ }
        if (scheme !== "https:") {
          throw invalid("--server", "ours, gtlsserver or an https:// URL", o.server);
        }
      }
      parseChoice(o.linkBackend, "--link-backend", BACKENDS);
      const stack = parseChoice(o.stack, "--stack", ["native", "deno"]) as "native" | "deno";
      const cases = o.cases === undefined
        ? undefined
        : parseList(o.cases, "--cases").map((c) => parseChoice(c, "--cases", INTEROP_CASES));
      const ours = stack === "deno" ? "our h3 server (deno stack: quinn)" : "our h3 server";
      const pairing = o.client
        ? `gtlsclient → ${ours}`
        : `our h3 client → ${o.server === undefined || o.server === "ours" ? ours : o.server}`;
      console.log(`QUIC interop matrix: ${pairing}`);
      // the matrix rows are its progress on a terminal; elsewhere progress: lines on stderr
      const progress = createProgress({ quiet: o.quiet, bar: false, rowName: "case" });
      progress.setRows?.((cases ?? INTEROP_CASES).length);
      let rows: MatrixRow[];
      try {
        rows = await runInterop({
          server: o.server,
          client: o.client,
          cases,
          linkBackend: o.linkBackend as LinkBackend,
          stack,
          onRow: (r) => {
            console.log(formatRow(r));
            progress.update(`${r.name} ${r.status}`, 1);
          },
        });
      } finally {
        progress.stop();
      }
      const count = (s: MatrixRow["status"]) => rows.filter((r) => r.status === s).length;
      console.log(
        `${count("pass")} passed, ${count("fail")} failed, ${count("unsupported")} unsupported`,
      );
      if (o.json) {
        await Deno.writeTextFile(o.json, JSON.stringify({ pairing, rows }, null, 2) + "\n");
      }
      if (!matrixPassed(rows)) throw new Error(`${count("fail")} supported case(s) failed`);
    });
}
