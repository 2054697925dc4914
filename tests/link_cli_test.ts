/** `lab link` command behaviour seen from outside: exit codes and one-line errors. */
import assert from "node:assert/strict";
import { LINK_SKIP } from "../linkemu/_test_util.ts";

const CLI = new URL("../main.ts", import.meta.url).pathname;

async function lab(args: string[], prefix: string[] = []) {
  const cmd = prefix.length ? prefix[0] : Deno.execPath();
  const out = await new Deno.Command(cmd, {
    args: [
      ...prefix.slice(1),
      ...(prefix.length ? [Deno.execPath()] : []),
      "run",
      "-A",
      "--quiet",
      CLI,
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  // commander's hint after a usage error is not part of the message
  const stderr = dec.decode(out.stderr).split("\n")
    .filter((l) => !l.startsWith("(run lab ")).join("\n").trim();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr };
}

Deno.test("link selftest with a bad spec exits 2 with one line naming the key", async () => {
  for (const [spec, key] of [["wan,loss=2", "loss"], ["colour=red", "colour"], ["wam", "wam"]]) {
    const r = await lab(["link", "selftest", "--link", spec]);
    assert.equal(r.code, 2, spec);
    assert.equal(r.stderr.split("\n").length, 1, r.stderr);
    assert.match(r.stderr, new RegExp(key));
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
});

Deno.test("link profiles lists every named profile with its settings", async () => {
  const r = await lab(["link", "profiles"]);
  assert.equal(r.code, 0);
  for (
    const name of ["lan", "metro", "wan", "lossy", "qir", "handshakeloss", "longrtt", "blackhole"]
  ) {
    assert.match(r.stdout, new RegExp(`^${name} `, "m"));
  }
  assert.match(r.stdout, /^profile\s+RTT\s+loss\s+rate\s+stands for/m);
  assert.match(
    r.stdout,
    /^wan\s+50 ms\s+0\.1 %\s+unlimited\s+a long-haul WAN.*delay=25ms,loss=0\.1%$/m,
  );
  assert.match(r.stdout, /^qir\s+30 ms\s+0\s+10 Mbit\/s\s+the QUIC interop runner's default link/m);
});

Deno.test({
  name: "link up without CAP_NET_ADMIN says it needs root in one line",
  ignore: LINK_SKIP !== null,
  fn: async () => {
    // Run as root but with the capabilities removed from the bounding set.
    const drop = ["setpriv", "--bounding-set=-net_admin,-sys_admin", "--inh-caps=-all"];
    const r = await lab(["link", "up", "--link", "lan"], drop);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(
      r.stderr,
      "error: Emulated links need root (CAP_NET_ADMIN and CAP_SYS_ADMIN): run as root",
    );
  },
});
