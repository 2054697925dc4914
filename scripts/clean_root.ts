/**
 * A minimal Debian root (`debootstrap --variant=minbase bookworm`) for proving
 * `build/lab` on a host that has none of sbilab's packages: no Deno, no npm,
 * no nghttp2, ngtcp2 or nghttp3. Built once into `build/clean-root/` and kept
 * between runs (the first build takes a minute or two and needs the Debian
 * mirror apt is configured with).
 *
 * Usage: deno run -A scripts/clean_root.ts   (prints the root's path)
 */
import { BUILD_DIR } from "../lib/native_build.ts";
import { findTool, pathExists } from "../lib/host.ts";

/** The suite the root is made of: the release sbilab's packages come from. */
export const SUITE = "bookworm";

/** Where the root lives. */
export const CLEAN_ROOT = `${BUILD_DIR}/clean-root/${SUITE}-minbase`;

const DONE = ".sbilab-complete";

/** Why a clean root cannot be built here (naming what to install), or undefined when it can. */
export function cleanRootMissing(): string | undefined {
  if (Deno.uid() !== 0) return "needs root (debootstrap, chroot and namespaces)";
  if (!findTool("debootstrap")) return "needs debootstrap: apt-get install -y debootstrap";
  for (const t of ["unshare", "nsenter", "chroot"]) {
    if (!findTool(t)) return `needs ${t}: apt-get install -y util-linux coreutils`;
  }
  if (!findTool("ip")) return "needs ip: apt-get install -y iproute2";
  return undefined;
}

/**
 * The Debian mirror apt uses here (the first `deb` source that is not the
 * security archive), from /etc/apt/sources.list and sources.list.d.
 */
export async function debianMirror(): Promise<string> {
  const files = ["/etc/apt/sources.list"];
  try {
    for await (const e of Deno.readDir("/etc/apt/sources.list.d")) {
      if (/\.(list|sources)$/.test(e.name)) files.push(`/etc/apt/sources.list.d/${e.name}`);
    }
  } catch {
    // no sources.list.d
  }
  const urls: string[] = [];
  for (const f of files.sort()) {
    const text = await Deno.readTextFile(f).catch(() => "");
    for (const line of text.split("\n")) {
      const one = /^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)/.exec(line);
      const deb822 = /^\s*URIs:\s*(.+)$/i.exec(line);
      if (one) urls.push(one[1]);
      if (deb822) urls.push(...deb822[1].trim().split(/\s+/));
    }
  }
  const mirror = urls.find((u) => /^https?:/.test(u) && !/security/.test(u));
  return (mirror ?? "http://deb.debian.org/debian").replace(/\/$/, "");
}

/** Returns the clean root, building it first when absent. Throws with one line on failure. */
export async function ensureCleanRoot(
  options: {
    /** Called with one line before a build starts (default: nothing). */
    onBuild?: (line: string) => void;
  } = {},
): Promise<string> {
  if (await pathExists(`${CLEAN_ROOT}/${DONE}`)) return CLEAN_ROOT;
  const missing = cleanRootMissing();
  if (missing) throw new Error(`Cannot build a clean root: ${missing}`);
  const mirror = await debianMirror();
  const tmp = `${CLEAN_ROOT}.tmp`;
  await Deno.remove(tmp, { recursive: true }).catch(() => {});
  await Deno.remove(CLEAN_ROOT, { recursive: true }).catch(() => {});
  await Deno.mkdir(tmp, { recursive: true });
  options.onBuild?.(`debootstrap --variant=minbase ${SUITE} from ${mirror}`);
  const child = new Deno.Command("debootstrap", {
    args: ["--variant=minbase", SUITE, tmp, mirror],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), 900_000);
  const out = await child.output();
  clearTimeout(timer);
  if (!out.success) {
    const log = new TextDecoder().decode(out.stderr).trim().split("\n").pop() ?? "";
    throw new Error(`debootstrap failed: ${log}`);
  }
  await Deno.writeTextFile(`${tmp}/${DONE}`, `${SUITE} minbase from ${mirror}\n`);
  await Deno.rename(tmp, CLEAN_ROOT);
  return CLEAN_ROOT;
}

if (import.meta.main) {
  try {
    console.log(await ensureCleanRoot({ onBuild: (l) => console.error(l) }));
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    Deno.exit(1);
  }
}
