/** `lab certs`: write a dev PKI as PEM files. */
import type { Command } from "commander";
import { DEV_PKI_FILES, writeDevPki } from "../transports/pki.ts";

/** Adds `certs`. */
export function registerCertsCommand(program: Command): void {
  program.command("certs")
    .description("write a dev CA, server and client certificate as PEM")
    .requiredOption("--out <dir>", "folder to write into (created if missing)")
    .option("--name <names>", "extra server names or IPs, comma-separated")
    .action(async (o: { out: string; name?: string }) => {
      const extra = o.name ? o.name.split(",").map((s) => s.trim()).filter(Boolean) : [];
      const { createDevPki } = await import("../transports/pki.ts");
      try {
        await writeDevPki(o.out, await createDevPki({ extraServerNames: extra }));
      } catch (err) {
        throw new TypeError(`Cannot write to ${o.out}: ${(err as Error).message}`);
      }
      for (const f of Object.values(DEV_PKI_FILES)) console.log(`${o.out}/${f}`);
    });
}
