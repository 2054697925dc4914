/** `lab --version`: the version, and which kind of program is running it. */

/** sbilab's version. */
export const VERSION = "0.1.0";

/** Set by the self-unpacking executable's launcher to its cache folder. */
export const BUNDLE_ENV = "SBILAB_BUNDLE";

/** How this `lab` runs: a `deno compile` executable, the self-unpacking one, or a checkout. */
export function programKind(): string {
  if (Deno.mainModule.includes("deno-compile")) return "deno compile executable";
  const bundle = Deno.env.get(BUNDLE_ENV);
  if (bundle) return `self-unpacking executable, unpacked in ${bundle}`;
  return `checkout, ${new URL("..", import.meta.url).pathname.replace(/\/$/, "")}`;
}

/** The line `lab --version` prints. */
export function versionLine(): string {
  return `lab ${VERSION} (${programKind()}; deno ${Deno.version.deno})`;
}
