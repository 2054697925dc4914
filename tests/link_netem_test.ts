/** `--link-backend netem`: used where the kernel has sch_netem, a one-line error otherwise. */
import assert from "node:assert/strict";
import { openLink, parseLinkSpec, runSelftest } from "../linkemu/mod.ts";
import { LINK_SKIP } from "../linkemu/_test_util.ts";

/** Whether the kernel's build configuration includes sch_netem; undefined when it is not readable. */
async function kernelHasNetem(): Promise<boolean | undefined> {
  let config: string | undefined;
  try {
    const gz = await Deno.readFile("/proc/config.gz");
    const text = new Blob([gz]).stream().pipeThrough(new DecompressionStream("gzip"));
    config = await new Response(text).text();
  } catch {
    try {
      const release = (await Deno.readTextFile("/proc/sys/kernel/osrelease")).trim();
      config = await Deno.readTextFile(`/boot/config-${release}`);
    } catch {
      return undefined;
    }
  }
  return /^CONFIG_NET_SCH_NETEM=[ym]$/m.test(config);
}

const hasNetem = await kernelHasNetem();
if (hasNetem === undefined && LINK_SKIP === null) {
  console.warn("skipping netem test: the kernel configuration is unreadable (no /proc/config.gz)");
}

Deno.test({
  name: hasNetem
    ? "the netem backend passes the wan selftest on a kernel with sch_netem"
    : "the netem backend says in one line that this kernel lacks sch_netem, and leaves nothing behind",
  ignore: LINK_SKIP !== null || hasNetem === undefined,
  fn: async () => {
    if (hasNetem) {
      const report = await runSelftest(parseLinkSpec("wan"), { backend: "netem" });
      assert.equal(report.passed, true, JSON.stringify(report.checks));
    } else {
      await assert.rejects(
        () => runSelftest(parseLinkSpec("wan"), { backend: "netem" }),
        (err: Error) => {
          assert.equal(
            err.message,
            "This kernel lacks sch_netem (tc netem failed): use the default relay backend",
          );
          return true;
        },
      );
      const out = await new Deno.Command("ip", { args: ["netns", "list"] }).output();
      assert.doesNotMatch(new TextDecoder().decode(out.stdout), /sbilab-netemprobe/);
    }
    await assert.rejects(
      () => openLink(parseLinkSpec("blackhole"), { backend: "netem" }),
      RangeError,
    );
  },
});
