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
import { UsageError } from "./args.ts";

interface InteropCliOptions {
  server?: string;
  client?: boolean;
  cases?: string;
  linkBackend: string;
  json?: string;
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
    .option("--json <file>", "also write the matrix as JSON to FILE")
    .action(async (o: InteropCliOptions) => {
      if (o.server !== undefined && o.client) {
        throw new UsageError("--server and --client exclude each other");
      }
      if (o.server !== undefined && o.server !== "ours" && o.server !== "gtlsserver") {
        let url: URL;
        try {
          url = new URL(o.server);
        } catch {
          throw new UsageError(
            `--server must be ours, gtlsserver or an https:// URL, got ${o.server}`,
          );
        }
        if (url.protocol !== "https:") {
          throw new UsageError(`--server needs an https:// URL, got ${o.server}`);
        }
      }
      if (!BACKENDS.includes(o.linkBackend)) {
        throw new UsageError(
          `--link-backend must be one of ${BACKENDS.join(", ")}, got ${o.linkBackend}`,
        );
      }
      const cases = o.cases?.split(",").map((c) => c.trim()).filter(Boolean);
      if (cases && cases.length === 0) throw new UsageError("--cases needs at least one case");
      for (const c of cases ?? []) {
        if (!INTEROP_CASES.includes(c)) {
          throw new UsageError(`Unknown case ${c} (known: ${INTEROP_CASES.join(", ")})`);
        }
      }
      const pairing = o.client
        ? "gtlsclient → our h3 server"
        : `our h3 client → ${
          o.server === undefined || o.server === "ours" ? "our h3 server" : o.server
        }`;
      console.log(`QUIC interop matrix: ${pairing}`);
      const rows: MatrixRow[] = await runInterop({
        server: o.server,
        client: o.client,
        cases,
        linkBackend: o.linkBackend as LinkBackend,
        onRow: (r) => console.log(formatRow(r)),
      });
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
