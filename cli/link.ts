/**
 * `lab link …` commands: `selftest`, `up`, `cleanup`, `profiles`.
 *
 * @module
 */
import { type Command, Option } from "commander";
import { asUsage, parseChoice, parseInteger } from "./args.ts";
import { cleanupLinks } from "../linkemu/cleanup.ts";
import { type LinkBackend, openLink } from "../linkemu/link.ts";
import {
  configuredRttMs,
  formatLinkSpec,
  type LinkSpec,
  parseLinkSpec,
  PROFILES,
} from "../linkemu/link_spec.ts";
import { formatSelftestReport } from "../linkemu/report.ts";
import { runSelftest } from "../linkemu/selftest.ts";

/** commander argument parser for `--link SPEC` (usable by other commands). */
export function linkSpecArg(value: string): LinkSpec {
  return asUsage(() => parseLinkSpec(value), "--link");
}

/** The `--link-backend` option (usable by other commands). */
export function linkBackendOption(): Option {
  return new Option("--link-backend <backend>", "how namespaces are joined: relay or netem")
    .argParser((v) => parseChoice(v, "--link-backend", ["relay", "netem"]))
    .default("relay");
}

/** commander argument parser for a whole-number option. */
function intArg(flag: string, min: number, max: number): (v: string) => number {
  return (v: string) => parseInteger(v, flag, { min, max });
}

/** The named profiles as a table: round trip, loss, rate, what each stands for, its spec. */
export function profileTable(): string {
  const rows = Object.entries(PROFILES).map(([name, p]) => {
    const spec = parseLinkSpec(name);
    const loss = Math.max(spec.up.loss, spec.down.loss);
    const rate = Math.max(spec.up.rateBps, spec.down.rateBps);
    return [
      name,
      `${+configuredRttMs(spec).toFixed(3)} ms`,
      loss ? `${+(loss * 100).toFixed(3)} %` : "0",
      rate ? `${+(rate / 1e6).toFixed(3)} Mbit/s` : "unlimited",
      p.standsFor,
      formatLinkSpec(spec) || "(none)",
    ];
  });
  const header = ["profile", "RTT", "loss", "rate", "stands for", "spec (one-way delays)"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

/** Registers `link selftest|up|cleanup|profiles` on `program`. */
export function registerLinkCommands(program: Command): void {
  const link = program.command("link").description(
    "emulated WAN links between two network namespaces (needs root)",
  );

  link.command("selftest")
    .description(
      "send probes through a link and compare configured with measured delay, loss, rate",
    )
    .option("--link <spec>", "profile or key=value list", linkSpecArg, parseLinkSpec("wan"))
    .option("--packets <n>", "probes to send", intArg("--packets", 100, 1_000_000), 10000)
    .option(
      "--pps <n>",
      "probes per second (default: 10000, less on rate-limited links)",
      intArg("--pps", 1, 100000),
    )
    .option("--seed <n>", "relay random seed", intArg("--seed", 0, 2 ** 31))
    .option("--json <file>", "also write the report as JSON")
    .addOption(linkBackendOption())
    .action(async (o: {
      link: LinkSpec;
      packets: number;
      pps?: number;
      seed?: number;
      json?: string;
      linkBackend: LinkBackend;
    }) => {
      const report = await runSelftest(o.link, {
        packets: o.packets,
        pps: o.pps,
        seed: o.seed,
        backend: o.linkBackend,
      });
      console.log(formatSelftestReport(report));
      if (o.json) await Deno.writeTextFile(o.json, JSON.stringify(report, null, 2) + "\n");
      if (!report.passed) throw new Error("Selftest failed: the link does not match its spec");
    });

  link.command("up")
    .description("open a link and hold it until Ctrl-C, printing its namespaces and addresses")
    .option("--link <spec>", "profile or key=value list", linkSpecArg, parseLinkSpec("lan"))
    .option("--seed <n>", "relay random seed", intArg("--seed", 0, 2 ** 31))
    .addOption(linkBackendOption())
    .action(async (o: { link: LinkSpec; seed?: number; linkBackend: LinkBackend }) => {
      const l = await openLink(o.link, { seed: o.seed, backend: o.linkBackend });
      console.log(`link ${l.id} up: ${formatLinkSpec(o.link)} (${l.backend})`);
      console.log(`client namespace ${l.clientNs} address ${l.clientAddr} device ${l.clientIf}`);
      console.log(`server namespace ${l.serverNs} address ${l.serverAddr} device ${l.serverIf}`);
      if (l.relayPid) {
        console.log(
          `relay pid ${l.relayPid} (kill -USR2 ${l.relayPid} moves the client to a new source port)`,
        );
      }
      console.log(`run commands with: ip netns exec ${l.clientNs} …; Ctrl-C removes the link`);
      // An interrupt closes the link (lib/interrupt.ts) and main.ts ends the process; this only waits.
      await l.closed;
    });

  link.command("cleanup")
    .description("remove links whose owner died (namespaces, devices, relays, state files)")
    .option("--all", "also remove links whose owner still runs", false)
    .action(async (o: { all: boolean }) => {
      const r = await cleanupLinks({ all: o.all });
      const parts = [
        `${r.links.length} link(s)`,
        `${r.namespaces.length} namespace(s)`,
        `${r.devices.length} device(s)`,
        `${r.pids.length} process(es)`,
      ];
      console.log(`removed ${parts.join(", ")}`);
      for (const ns of r.namespaces) console.log(`  namespace ${ns}`);
      for (const dev of r.devices) console.log(`  device ${dev}`);
      for (const pid of r.pids) console.log(`  pid ${pid}`);
      if (r.kept.length) console.log(`kept (owner still running): ${r.kept.join(", ")}`);
    });

  link.command("profiles")
    .description("list the named link profiles")
    .action(() => {
      console.log(profileTable());
    });
}
