/**
 * The first step of `deno task test` and `deno task bench`: installs the
 * Debian packages in system_packages.txt that are missing (as root; otherwise
 * it stops with the one apt-get line to run), then builds the native code.
 * Silent when everything is there and built.
 *
 * Usage: deno run -A scripts/ensure_system.ts
 * (SBILAB_PACKAGES_FILE names another package list, for tests.)
 */
import { NATIVE_TARGETS } from "../lib/native_targets.ts";
import { ensureBuilt } from "../lib/native_build.ts";
import { ROOT } from "../lib/host.ts";

/** The packages of system_packages.txt, in order. */
export async function systemPackages(): Promise<string[]> {
  const file = Deno.env.get("SBILAB_PACKAGES_FILE") ?? `${ROOT}/scripts/system_packages.txt`;
  const text = await Deno.readTextFile(file);
  return text.split("\n").map((l) => l.replace(/#.*/, "").trim()).filter(Boolean);
}

/** The packages dpkg does not list as installed; undefined where there is no dpkg. */
export async function missingPackages(packages: string[]): Promise<string[] | undefined> {
  let out;
  try {
    out = await new Deno.Command("dpkg-query", {
      args: ["-W", "-f=${Package} ${Status}\\n", ...packages],
      stdout: "piped",
      stderr: "null",
    }).output();
  } catch {
    return undefined;
  }
  const installed = new Set(
    new TextDecoder().decode(out.stdout).split("\n")
      .filter((l) => l.endsWith("install ok installed"))
      .map((l) => l.split(" ")[0].split(":")[0]),
  );
  return packages.filter((p) => !installed.has(p));
}

/** What to do about `missing` packages as user `uid`: nothing, install them, or stop with a message. */
export function installPlan(
  missing: string[],
  uid: number,
): { install: string[] } | { error: string } | undefined {
  if (missing.length === 0) return undefined;
  if (uid === 0) return { install: missing };
  const line = `apt-get install -y --no-install-recommends ${missing.join(" ")}`;
  return { error: `missing system packages; run: sudo ${line}` };
}

async function run(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, {
    args,
    env: { DEBIAN_FRONTEND: "noninteractive" },
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const last = new TextDecoder().decode(out.stderr).trim().split("\n").at(-1);
    throw new Error(`${cmd} ${args[0]} failed: ${last ?? `exit ${out.code}`}`);
  }
}

async function main(): Promise<number> {
  const missing = await missingPackages(await systemPackages());
  if (missing === undefined) {
    console.error(
      "system packages: no dpkg here; install the packages in scripts/system_packages.txt by hand",
    );
  } else {
    const plan = installPlan(missing, Deno.uid() ?? 0);
    if (plan && "error" in plan) {
      console.error(`error: ${plan.error}`);
      return 1;
    }
    if (plan) {
      console.error(`installing system packages: ${plan.install.join(" ")}`);
      await run("apt-get", ["update", "-qq"]);
      await run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...plan.install]);
    }
  }
  for (const name of Object.keys(NATIVE_TARGETS)) await ensureBuilt(name);
  return 0;
}

if (import.meta.main) {
  try {
    Deno.exit(await main());
  } catch (err) {
    console.error(`error: ${(err as Error).message.split("\n")[0]}`);
    Deno.exit(1);
  }
}
