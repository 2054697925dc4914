/**
 * (Cleanups here name their link ids so they never touch links that other
 * test files have open at the same time.)
 *
 * Nothing outlives a link: Ctrl-C removes it, and `cleanup` removes what a
 * SIGKILLed owner left behind (while leaving live owners' links alone).
 */
import assert from "node:assert/strict";
import { cleanupLinks, openLink, parseLinkSpec } from "../linkemu/mod.ts";
import { LineReader, LINK_SKIP } from "../linkemu/_test_util.ts";

const ignore = LINK_SKIP !== null;
const CLI = new URL("../main.ts", import.meta.url).pathname;
const STATE_DIR = Deno.env.get("SBILAB_LINK_STATE_DIR") ?? "/run/sbilab/links";

async function namespaces(): Promise<string[]> {
  const out = await new Deno.Command("ip", { args: ["netns", "list"] }).output();
  return new TextDecoder().decode(out.stdout).split("\n").map((l) => l.split(" ")[0]);
}

async function devices(): Promise<string[]> {
  const out = await new Deno.Command("ip", { args: ["-o", "link", "show"] }).output();
  return new TextDecoder().decode(out.stdout).split("\n").map((l) => l.split(":")[1]?.trim());
}

function alive(pid: number): boolean {
  try {
    return !Deno.readTextFileSync(`/proc/${pid}/stat`).includes(") Z ");
  } catch {
    return false;
  }
}

function stateFile(id: string): string {
  return `${STATE_DIR}/${id}.json`;
}

/** Starts `lab link up` in a child process and waits until the link is up. */
async function linkUp(spec: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, "link", "up", "--link", spec],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = new LineReader(child.stdout);
  const head = await lines.waitFor(/^link \w+ up/, 30000);
  await lines.waitFor(/^server namespace/);
  const id = head.split(" ")[1];
  const state = JSON.parse(await Deno.readTextFile(stateFile(id)));
  return { child, lines, id, state };
}

async function assertGone(id: string, relayPid: number): Promise<void> {
  const ns = await namespaces();
  assert.ok(!ns.includes(`sbilab-${id}-c`) && !ns.includes(`sbilab-${id}-s`), ns.join(","));
  assert.ok(!(await devices()).some((d) => d?.startsWith(`sbl-${id}`)));
  assert.ok(!alive(relayPid), `relay ${relayPid} still runs`);
  await assert.rejects(() => Deno.stat(stateFile(id)), Deno.errors.NotFound);
}

Deno.test({
  name: "cleanup removes namespaces, processes and relay of a link whose owner was SIGKILLed",
  ignore,
  fn: async () => {
    const { child, lines, id, state } = await linkUp("wan");
    assert.ok(alive(state.relayPid));
    // Something running inside the link, as a benchmark server would.
    const sleeper = new Deno.Command("ip", {
      args: ["netns", "exec", state.serverNs, "sleep", "300"],
    }).spawn();
    child.kill("SIGKILL");
    await child.status;
    await lines.cancel();
    await child.stderr.cancel();
    // The owner is gone but the namespaces are not.
    assert.ok((await namespaces()).includes(state.clientNs));

    const report = await cleanupLinks({ ids: [id] });
    assert.ok(report.links.includes(id), JSON.stringify(report));
    assert.ok(report.namespaces.includes(state.serverNs));
    const status = await sleeper.status;
    assert.equal(status.signal, "SIGKILL");
    await assertGone(id, state.relayPid);
  },
});

Deno.test({
  name: "Ctrl-C on link up removes the link before exiting",
  ignore,
  fn: async () => {
    const { child, lines, id, state } = await linkUp("lan");
    child.kill("SIGINT");
    const status = await child.status;
    await lines.cancel();
    await child.stderr.cancel();
    assert.equal(status.code, 130);
    await assertGone(id, state.relayPid);
  },
});

Deno.test({
  name: "cleanup leaves a link alone while its owner runs, and removes it with all",
  ignore,
  fn: async () => {
    const link = await openLink(parseLinkSpec("lan"), { autoCleanup: false });
    try {
      const report = await cleanupLinks({ ids: [link.id] });
      assert.ok(report.kept.includes(link.id));
      assert.ok((await namespaces()).includes(link.clientNs));
      assert.ok(alive(link.relayPid!));
      const all = await cleanupLinks({ all: true, ids: [link.id] });
      assert.ok(all.links.includes(link.id));
      await assertGone(link.id, link.relayPid!);
    } finally {
      await link.close();
    }
  },
});
