/**
 * Builds the project's native code now (otherwise it is built on first use).
 *
 * Usage: deno run -A scripts/build_native.ts [name…]
 */
import { ensureBuilt } from "../lib/native_build.ts";
import { NATIVE_TARGETS } from "../lib/native_targets.ts";

const names = Deno.args.length ? Deno.args : Object.keys(NATIVE_TARGETS);
try {
  for (const n of names) console.log(await ensureBuilt(n));
} catch (err) {
  console.error(`error: ${(err as Error).message}`);
  Deno.exit(1);
}
