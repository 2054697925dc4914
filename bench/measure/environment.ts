/** Describes the machine and software a run used. */
import type { Environment } from "../record/schema.ts";
import { ROOT } from "../../lib/host.ts";

const LIBRARIES = ["hdr-histogram-js", "chart.js", "cli-progress", "commander", "@peculiar/x509"];

async function text(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return undefined;
  }
}

async function git(args: string[]): Promise<string | undefined> {
  try {
    const out = await new Deno.Command("git", { args, cwd: ROOT, stdout: "piped", stderr: "null" })
      .output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : undefined;
  } catch {
    return undefined;
  }
}

/** Collects the environment (never throws; unknown fields say `unknown`). */
export async function collectEnvironment(): Promise<Environment> {
  const cpuinfo = (await text("/proc/cpuinfo")) ?? "";
  const cpuModel = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? "unknown";
  const libraries: Record<string, string> = {};
  for (const name of LIBRARIES) {
    const pkg = await text(`${ROOT}/node_modules/${name}/package.json`);
    if (pkg) {
      try {
        libraries[name] = JSON.parse(pkg).version;
      } catch {
        // unreadable package.json
      }
    }
  }
  const rev = await git(["rev-parse", "HEAD"]);
  const dirty = await git(["status", "--porcelain", "--untracked-files=no"]);
  let hostname = "unknown";
  try {
    hostname = Deno.hostname();
  } catch {
    // no permission
  }
  return {
    cpuModel,
    cores: navigator.hardwareConcurrency,
    kernel: Deno.osRelease(),
    os: `${Deno.build.os} ${Deno.build.arch}`,
    hostname,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    typescript: Deno.version.typescript,
    libraries,
    gitRevision: rev ? `${rev}${dirty ? "-dirty" : ""}` : "unknown",
  };
}
