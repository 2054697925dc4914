/** `--link-backend netem`: used where the kernel has sch_netem, a one-line error otherwise. */
import assert from "node:assert/strict";
import { openLink, parseLinkSpec, runSelftest } from "../linkemu/mod.ts";
import { LINK_SKIP } from "../linkemu/_test_util.ts";

Deno.test({
  name: "the netem backend passes the wan selftest, or says in one line the kernel lacks sch_netem",
  ignore: LINK_SKIP !== null,
  fn: async () => {
    try {
      const report = await runSelftest(parseLinkSpec("wan"), { backend: "netem" });
      assert.equal(report.passed, true, JSON.stringify(report.checks));
    } catch (err) {
      assert.ok(err instanceof Error);
      assert.equal(
        err.message,
        "This kernel lacks sch_netem (tc netem failed): use the default relay backend",
      );
      // nothing was left behind by the failed attempt
      const out = await new Deno.Command("ip", { args: ["netns", "list"] }).output();
      assert.doesNotMatch(new TextDecoder().decode(out.stdout), /sbilab-netemprobe/);
    }
    await assert.rejects(
      () => openLink(parseLinkSpec("blackhole"), { backend: "netem" }),
      RangeError,
    );
  },
});
