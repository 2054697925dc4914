/**
 * `deno task compile`: builds the native HTTP/3 and HTTP/2-client modules and
 * compiles `lab` into one executable (`build/lab`) that carries them inside.
 *
 * `deno compile` needs a `denort` runtime. It honours `DENORT_BIN` (a path
 * to a denort binary of the same Deno version); without it Deno downloads
 * denort from its own host, which may be unreachable, and this script then
 * fails with one line saying so.
 */
import { BUILD_DIR, ensureBuilt, NativeBuildError } from "../lib/native_build.ts";
import { ROOT } from "../lib/host.ts";

const OUTPUT = `${BUILD_DIR}/lab`;

async function main(): Promise<number> {
  const denort = Deno.env.get("DENORT_BIN");
  if (denort) {
    try {
      await Deno.stat(denort);
    } catch {
      console.error(`error: DENORT_BIN points to ${denort}, which does not exist`);
      return 1;
    }
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
    if (!denort && /download|denort|dl\.deno\.land|error sending request|dns|connect/i.test(text)) {
      console.error(
        "error: deno compile could not download denort; set DENORT_BIN=/path/to/denort (Deno 2.9.6) and retry",
      );
    } else {
      const line = text.split("\n").find((l) => /error/i.test(l)) ?? text.split("\n")[0];
      console.error(`error: deno compile failed: ${line.trim()}`);
    }
    return 1;
  }
  console.log(OUTPUT);
  return 0;
}

if (import.meta.main) Deno.exit(await main());
