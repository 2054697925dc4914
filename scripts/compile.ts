/**
 * `deno task compile`: builds the native modules and writes one executable,
 * `build/lab`, that an operator copies to a host. Two kinds:
 *
 * - with `DENORT_BIN` (a denort binary of the same Deno version): `deno
 *   compile`, with the native HTTP/3 and HTTP/2 modules embedded;
 * - without it: the self-unpacking executable of scripts/pack.ts (the Deno CLI,
 *   the program with its npm packages installed, the native modules and the
 *   shared libraries they need beyond glibc), because no reachable registry
 *   ships denort.
 */
import { BUILD_DIR, ensureBuilt, NativeBuildError } from "../lib/native_build.ts";
import { ROOT } from "../lib/host.ts";
import { packExecutable } from "./pack.ts";
import { V8_FLAGS_ARG } from "../lib/v8_flags.ts";
import { formatBytes } from "../lib/units.ts";

const OUTPUT = `${BUILD_DIR}/lab`;

async function main(): Promise<number> {
  const denort = Deno.env.get("DENORT_BIN");
  if (!denort) {
    try {
      const packed = await packExecutable({ output: OUTPUT });
      console.error(`self-unpacking executable ${packed.id}, ${formatBytes(packed.bytes)}`);
    } catch (err) {
      console.error(`error: packing ${OUTPUT} failed: ${(err as Error).message.split("\n")[0]}`);
      return 1;
    }
    console.log(OUTPUT);
    return 0;
  }
  try {
    await Deno.stat(denort);
  } catch {
    console.error(`error: DENORT_BIN points to ${denort}, which does not exist`);
    return 1;
  }
  const include: string[] = [];
  for (const [target, what] of [["h3", "HTTP/3"], ["h2", "HTTP/2"]]) {
    try {
      include.push("--include", await ensureBuilt(target));
    } catch (err) {
      const msg = err instanceof NativeBuildError ? err.message : String(err);
      console.error(`error: the ${what} module must be built first: ${msg}`);
      return 1;
    }
  }
  const args = [
    "compile",
    "-A",
    "--unstable-net",
    V8_FLAGS_ARG,
    ...include,
    "--output",
    OUTPUT,
    `${ROOT}/main.ts`,
  ];
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), 300_000);
  const out = await child.output();
  clearTimeout(timer);
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr);
    const line = text.split("\n").find((l) => /error/i.test(l)) ?? text.split("\n")[0];
    console.error(`error: deno compile failed: ${line.trim()}`);
    return 1;
  }
  console.log(OUTPUT);
  return 0;
}

if (import.meta.main) Deno.exit(await main());
