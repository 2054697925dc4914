/**
 * Builds the project's native code (see native_targets.ts) with the system C
 * compiler into the git-ignored `build/` folder, on first use and whenever a
 * source, header or flag changed (a content hash is kept beside each artefact).
 * `deno task build:native` (scripts/build_native.ts) builds everything at once.
 */
import { NATIVE_TARGETS, type NativeTarget } from "./native_targets.ts";
import { pathExists, ROOT } from "./host.ts";
/** Folder the artefacts are written to. Override with SBILAB_BUILD_DIR. */
export const BUILD_DIR = Deno.env.get("SBILAB_BUILD_DIR") ?? `${ROOT}/build`;

/** Raised when a native build cannot run or fails; `message` is one line. */
export class NativeBuildError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "NativeBuildError";
  }
}

async function fingerprint(target: NativeTarget): Promise<string> {
  const h = new TextEncoder().encode(JSON.stringify(target));
  const parts: Uint8Array[] = [h];
  for (const f of [...target.sources, ...(target.deps ?? [])]) {
    parts.push(await Deno.readFile(`${ROOT}/${f}`));
  }
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    all.set(p, o);
    o += p.length;
  }
  const digest = await crypto.subtle.digest("SHA-256", all);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Builds `name` if needed and returns the artefact's absolute path. */
export async function ensureBuilt(
  name: string,
  options: { quiet?: boolean } = {},
): Promise<string> {
  const target = NATIVE_TARGETS[name];
  if (!target) throw new NativeBuildError(`Unknown native target ${name}`);
  const out = `${BUILD_DIR}/${target.output}`;
  const stamp = `${out}.sha256`;
  const fp = await fingerprint(target);
  if (await pathExists(out)) {
    const old = await Deno.readTextFile(stamp).catch(() => "");
    if (old === fp) return out;
  }
  for (const r of target.requires ?? []) {
    if (!(await pathExists(r.header))) {
      throw new NativeBuildError(
        `Missing ${r.header}: run apt-get install -y ${r.apt}`,
      );
    }
  }
  await Deno.mkdir(BUILD_DIR, { recursive: true });
  const cc = Deno.env.get("CC") ?? "cc";
  const args = [
    "-O2",
    "-g",
    "-Wall",
    "-Wextra",
    ...(target.kind === "shared" ? ["-shared", "-fPIC"] : []),
    ...(target.cflags ?? []),
    "-o",
    `${out}.tmp`,
    ...target.sources.map((s) => `${ROOT}/${s}`),
    ...(target.libs ?? []),
  ];
  if (!options.quiet) console.error(`building ${target.output}`);
  let result;
  try {
    result = await new Deno.Command(cc, { args, stdout: "piped", stderr: "piped" }).output();
  } catch (err) {
    throw new NativeBuildError(`C compiler ${cc} not found: run apt-get install -y gcc`, {
      cause: err,
    });
  }
  if (!result.success) {
    const text = new TextDecoder().decode(result.stderr);
    const firstError = text.split("\n").find((l) => l.includes("error")) ?? text.split("\n")[0];
    throw new NativeBuildError(`Building ${target.output} failed: ${firstError.trim()}`, {
      cause: text,
    });
  }
  await Deno.rename(`${out}.tmp`, out);
  await Deno.writeTextFile(stamp, fp);
  return out;
}
