/**
 * `lab`: the sbilab command line. Parses arguments, dispatches one command,
 * and maps every error to one line on stderr and an exit status: this is the
 * only place that chooses one (see {@linkcode exitCodeFor}).
 */
import { Command, CommanderError } from "commander";
import { registerServeCommand } from "./cli/serve.ts";
import { INSECURE_ENV, registerRequestCommand } from "./cli/request.ts";
import { registerCertsCommand } from "./cli/certs.ts";
import { registerDoctorCommand } from "./cli/doctor.ts";
import { registerBenchCommand } from "./cli/bench.ts";
import { registerSoakCommand } from "./cli/soak.ts";
import { registerStudyCommand } from "./cli/study.ts";
import { registerLoadCommand } from "./cli/load.ts";
import { registerLinkCommands } from "./cli/link.ts";
import { registerInteropCommand } from "./cli/interop.ts";
import { registerReportCommands } from "./cli/report.ts";
import { registerK8sCommands } from "./cli/k8s.ts";
import { registerProfileCommand } from "./cli/profile.ts";
import { argumentHint, UsageError } from "./cli/args.ts";
import { RequestError, type RequestFailureKind } from "./cli/request_error.ts";
import { Interrupted, interruptSettled, setInterruptEnd } from "./lib/interrupt.ts";
import { versionLine } from "./cli/version.ts";
import { STACK_ENV } from "./transports/mod.ts";

/** Builds the command tree (exported for tests). */
export function buildProgram(): Command {
  const program = new Command("lab")
    .description("sbilab: HTTP/2 (h2c, TLS) and HTTP/3 for the 5G core SBI, side by side")
    .version(versionLine())
    .showHelpAfterError("(run lab --help for usage)")
    .exitOverride();
  registerServeCommand(program);
  registerRequestCommand(program);
  registerCertsCommand(program);
  registerDoctorCommand(program);
  registerBenchCommand(program);
  registerSoakCommand(program);
  registerReportCommands(program);
  registerStudyCommand(program);
  registerLoadCommand(program);
  registerLinkCommands(program);
  registerInteropCommand(program);
  registerK8sCommands(program);
  registerProfileCommand(program);
  oneHabit(program, "lab");
  program.hook("preAction", (_self, action) => refuseExtraArguments(action, commandPath(action)));
  return program;
}

function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/** Every command's usage errors end with its own help line, never the program's. */
function oneHabit(cmd: Command, path: string): void {
  for (const sub of cmd.commands) {
    const name = `${path} ${sub.name()}`;
    sub.showHelpAfterError(`(run ${name} --help for usage)`);
    oneHabit(sub, name);
  }
}

/**
 * An argument the command does not take is an error, never dropped: `lab bench
 * concurrency` says "did you mean --scenario concurrency?".
 */
function refuseExtraArguments(cmd: Command, name: string): void {
  const declared = cmd.registeredArguments;
  if (declared.some((a) => a.variadic)) return;
  const extra = cmd.args.slice(declared.length);
  if (extra.length === 0) return;
  const word = extra[0];
  const hint = argumentHint(name, word) ??
    (cmd.options.some((o) => o.long === `--${word}`) ? `--${word}` : undefined);
  const takes = declared.length === 0
    ? "takes no arguments"
    : `takes ${declared.length === 1 ? "one argument" : `${declared.length} arguments`} (${
      declared.map((a) => a.name()).join(", ")
    })`;
  // commander's own error: the line, then the command's help line, exit 2 (see exitCodeFor)
  cmd.error(
    `error: ${name} ${takes}, got ${extra.map((e) => `'${e}'`).join(" ")} as well` +
      (hint ? ` (did you mean ${hint}?)` : ""),
    { code: "lab.excessArguments" },
  );
}

/** `lab request`'s failures, with curl's exit status for the same failure. */
const REQUEST_EXIT: Record<RequestFailureKind, number> = {
  url: 3,
  resolve: 6,
  connect: 7,
  http: 22,
  timeout: 28,
  tls: 35,
  certificate: 60,
  other: 1,
};

/**
 * The exit status for an error a command threw: 0 for commander's help and
 * version, 2 for usage errors (commander's own and {@linkcode UsageError}),
 * 128 + the signal's number for an interrupt whose cleanups ran (130 for
 * SIGINT, 143 for SIGTERM), curl's status for a failed `lab request`, `lab load`
 * or `lab bench --target` ({@linkcode RequestError}: 3, 6, 7, 22, 28, 35, 60), 1 for
 * everything else.
 */
export function exitCodeFor(err: unknown): number {
  if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
  if (err instanceof UsageError) return 2;
  if (err instanceof Interrupted) return err.signal === "SIGINT" ? 130 : 143;
  if (err instanceof RequestError) return REQUEST_EXIT[err.kind];
  return 1;
}

function isCompiled(): boolean {
  return Deno.mainModule.includes("deno-compile");
}

/** `lab request -k` over h2 with the fetch client needs Deno's own flag: re-run under it once. */
async function maybeReexecInsecure(args: string[]): Promise<number | undefined> {
  if (args[0] !== "request" || Deno.env.get(INSECURE_ENV) === "1" || isCompiled()) return undefined;
  if (!args.includes("-k") && !args.includes("--insecure")) return undefined;
  if (args.includes("--h3")) return undefined;
  // the native h2 client (GnuTLS in the module) skips verification itself; only fetch needs this
  const at = args.findIndex((a) => a === "--stack" || a.startsWith("--stack="));
  const named = at < 0 ? undefined : args[at].includes("=") ? args[at].split("=")[1] : args[at + 1];
  if ((named ?? Deno.env.get(STACK_ENV) ?? "native") !== "deno") return undefined;
  const main = new URL(import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-net",
      "--unsafely-ignore-certificate-errors",
      "--quiet",
      main,
      ...args,
    ],
    env: { [INSECURE_ENV]: "1" },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  return (await child.status).code;
}

/**
 * `deno task` runs every task in the folder of deno.json and leaves the folder
 * the user stood in as `INIT_CWD`: go back there, so relative paths in options
 * (`--out ./pki`, `--json run.json`, `-d @body.json`) mean what the user typed.
 */
function standWhereTheUserStands(): void {
  const dir = Deno.env.get("INIT_CWD");
  if (!dir || dir === Deno.cwd()) return;
  try {
    Deno.chdir(dir);
  } catch {
    // the folder is gone or unreadable: relative paths stay relative to deno.json's folder
  }
}

if (import.meta.main) {
  const args = Deno.args;
  standWhereTheUserStands();
  setInterruptEnd((why) => Deno.exit(exitCodeFor(why)));
  try {
    const code = await maybeReexecInsecure(args);
    if (code !== undefined) Deno.exit(code);
    await buildProgram().parseAsync(args, { from: "user" });
    await interruptSettled();
    Deno.exit(0);
  } catch (err) {
    // An interrupt's status wins over the error it caused (a run cut short).
    await interruptSettled();
    // commander already printed its own message (help, version or a usage error)
    // -s: a failed request says nothing (its exit status says why)
    if (!(err instanceof CommanderError) && !(err instanceof RequestError && err.silent)) {
      const msg = err instanceof Error ? err.message : String(err);
      console.error(`error: ${msg.split("\n")[0]}`);
    }
    Deno.exit(exitCodeFor(err));
  }
}
