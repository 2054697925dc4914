/**
 * Builds the self-unpacking `build/lab` (what `deno task compile` makes when
 * no `DENORT_BIN` is given): scripts/launcher.sh followed by a gzip'd tar of
 *
 * - `bin/deno`: the Deno CLI running this script (the pinned version, as npm ships it);
 * - `app/`: the repository's files (those git tracks or would track) with
 *   `node_modules/` installed and the native artefacts and their build stamps
 *   in `app/build/`, so nothing is fetched or compiled on the host;
 * - `app/build/lib/`: every shared library those artefacts link beyond glibc,
 *   where their RPATH (`$ORIGIN/lib`, native_targets.ts) finds it first;
 * - `deno_dir/`: the `DENO_DIR` the npm packages were installed from.
 *
 * The launcher verifies the archive's SHA-256, unpacks it once per user into
 * a cache folder named after the version and that checksum, and runs `lab`
 * from there offline.
 */
import { BUILD_DIR, ensureBuilt } from "../lib/native_build.ts";
import { NATIVE_TARGETS } from "../lib/native_targets.ts";
import { ROOT } from "../lib/host.ts";
import { VERSION } from "../cli/version.ts";

/** Sonames that come with glibc (and libgcc_s, which Deno itself needs): never carried. */
const SYSTEM_LIBS = new Set([
  "linux-vdso.so.1",
  "ld-linux-x86-64.so.2",
  "libc.so.6",
  "libm.so.6",
  "libdl.so.2",
  "libpthread.so.0",
  "librt.so.1",
  "libresolv.so.2",
  "libgcc_s.so.1",
]);

/** What {@linkcode packExecutable} made. */
export interface PackResult {
  /** Path of the executable. */
  path: string;
  /** Cache folder name: `<version>-<first 12 hex digits of the archive's SHA-256>`. */
  id: string;
  /** Size of the executable in bytes. */
  bytes: number;
  /** The shared libraries carried, by soname, with the host path each was copied from. */
  libs: Record<string, string>;
}

async function run(
  cmd: string,
  args: string[],
  options: Deno.CommandOptions = {},
): Promise<string> {
  const out = await new Deno.Command(cmd, { ...options, args, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr).trim().split("\n");
    const err = text.find((l) => /error/i.test(l)) ?? text[0];
    throw new Error(`${cmd} ${args[0] ?? ""} failed: ${err}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** The shared libraries `ldd` lists for `files`, beyond glibc: soname → resolved path. */
export async function libsBeyondGlibc(files: string[]): Promise<Record<string, string>> {
  const libs: Record<string, string> = {};
  for (const f of files) {
    for (const line of (await run("ldd", [f])).split("\n")) {
      const m = /^\s*(\S+)\s+=>\s+(\S+)/.exec(line);
      if (!m) continue;
      if (m[2] === "not") throw new Error(`${f} needs ${m[1]}, which is not installed`);
      if (!SYSTEM_LIBS.has(m[1])) libs[m[1]] = m[2];
    }
  }
  return libs;
}

async function sha256File(path: string): Promise<string> {
  return (await run("sha256sum", [path])).split(" ")[0];
}

/**
 * Packs `build/lab` (or `options.output`). Builds every native target first.
 * Throws with a one-line message when a step fails.
 */
export async function packExecutable(
  options: {
    /** Where to write the executable (default `build/lab`). */
    output?: string;
    /** gzip level, 1–9 (default 6). */
    level?: number;
  } = {},
): Promise<PackResult> {
  const output = options.output ?? `${BUILD_DIR}/lab`;
  const work = `${output}.pack`;
  await Deno.remove(work, { recursive: true }).catch(() => {});
  const stage = `${work}/stage`;
  const app = `${stage}/app`;
  await Deno.mkdir(`${stage}/bin`, { recursive: true });
  await Deno.mkdir(`${app}/build/lib`, { recursive: true });

  await Deno.copyFile(Deno.execPath(), `${stage}/bin/deno`);
  await Deno.chmod(`${stage}/bin/deno`, 0o755);

  const tracked =
    (await run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
      cwd: ROOT,
    })).split("\0").filter((f) => f && !f.startsWith("docs/") && !f.startsWith(".ci/"));
  for (const f of tracked) {
    // a file deleted in the worktree but not yet in git's index is not packed
    const src = `${ROOT}/${f}`;
    if (!(await Deno.stat(src).then((s) => s.isFile, () => false))) continue;
    const dst = `${app}/${f}`;
    await Deno.mkdir(dst.slice(0, dst.lastIndexOf("/")), { recursive: true });
    await Deno.copyFile(src, dst);
  }

  const artefacts: string[] = [];
  for (const name of Object.keys(NATIVE_TARGETS)) {
    const built = await ensureBuilt(name);
    const file = built.slice(built.lastIndexOf("/") + 1);
    await Deno.copyFile(built, `${app}/build/${file}`);
    await Deno.copyFile(`${built}.sha256`, `${app}/build/${file}.sha256`);
    await Deno.chmod(`${app}/build/${file}`, 0o755);
    artefacts.push(built);
  }

  const libs = await libsBeyondGlibc(artefacts);
  for (const [soname, path] of Object.entries(libs)) {
    await Deno.copyFile(await Deno.realPath(path), `${app}/build/lib/${soname}`);
  }

  // npm packages into app/node_modules, from a DENO_DIR that travels along
  await run(Deno.execPath(), ["install", "--entrypoint", "main.ts"], {
    cwd: app,
    env: { DENO_DIR: `${stage}/deno_dir`, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
  });

  // Deno's analysis caches (SQLite) differ from one install to the next and are rebuilt on use
  for await (const e of Deno.readDir(`${stage}/deno_dir`)) {
    if (e.name !== "npm") await Deno.remove(`${stage}/deno_dir/${e.name}`, { recursive: true });
  }
  const unpackedMb = Math.ceil(Number((await run("du", ["-sm", stage])).split("\t")[0]) * 1.05);
  const archive = `${work}/payload.tar.gz`;
  await run("sh", [
    "-c",
    `tar -C "$1" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - . | gzip -${
      options.level ?? 6
    } -n >"$2"`,
    "sh",
    stage,
    archive,
  ]);
  const sha = await sha256File(archive);
  const id = `${VERSION}-${sha.slice(0, 12)}`;

  // SKIP is tail's 1-based start of the archive, so it counts its own digits: pad it
  const template = await Deno.readTextFile(`${ROOT}/scripts/launcher.sh`);
  const withoutSkip = template.replace("@ID@", id).replace("@SHA@", sha)
    .replace("@MB@", String(unpackedMb));
  const width = 10;
  const stubBytes = new TextEncoder().encode(withoutSkip).length - "@SKIP@".length + width;
  const stub = withoutSkip.replace("@SKIP@", String(stubBytes + 1).padStart(width, "0"));
  if (new TextEncoder().encode(stub).length !== stubBytes) throw new Error("Launcher size drifted");

  const tmp = `${output}.tmp`;
  await Deno.writeTextFile(tmp, stub, { mode: 0o755 });
  const out = await Deno.open(tmp, { append: true });
  const payload = await Deno.open(archive);
  await payload.readable.pipeTo(out.writable);
  await Deno.chmod(tmp, 0o755);
  await Deno.rename(tmp, output);
  await Deno.remove(work, { recursive: true });
  return { path: output, id, bytes: (await Deno.stat(output)).size, libs };
}
