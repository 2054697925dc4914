/**
 * `lab load --shard` on a cluster of one box: four `lab load` processes, each
 * in its own network namespace with its own address on a bridge (as pods), load
 * one native h2c server in this process across veth; `lab report merge` adds
 * their records. The server's handler counts every request it answered.
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import { createServer } from "../transports/mod.ts";
import { labCommand } from "../lib/lab_serve.ts";
import { LINK_SKIP } from "../linkemu/_test_util.ts";
import { openPodNet, type PodNet } from "../linkemu/pods.ts";
import { histogramFromPairs, type LoadRecord, summarize } from "../load/mod.ts";
import { runLab, until } from "./support.ts";

const PATH = "/nbench/v1/payload?size=64";
const dec = new TextDecoder();

/** Starts shard i of `n` of `lab load` inside pod i; resolves with its exit code and stderr. */
function shard(net: PodNet, i: number, n: number, url: string, args: string[], json: string) {
  const child = net.exec(i, [
    ...labCommand(),
    "load",
    url,
    "--shard",
    `${i}/${n}`,
    "--json",
    json,
    "--no-progress",
    ...args,
  ], { stdout: "piped", stderr: "piped" });
  const out = child.output().then((o) => ({ code: o.code, stderr: dec.decode(o.stderr) }));
  return { child, out };
}

async function readRecord(path: string): Promise<LoadRecord> {
  return JSON.parse(await Deno.readTextFile(path));
}

Deno.test({
  name: "four shards in their own namespaces merge into one run of the whole plan",
  ignore: LINK_SKIP !== null,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  await using net = await openPodNet(4);
  let answered = 0;
  const inner = createHandler();
  const server = await createServer("h2c", (req) => {
    answered++;
    return inner(req);
  }, { hostname: net.hostAddr });
  const url = `http://${net.hostAddr}:${server.port}${PATH}`;
  const dir = await Deno.makeTempDir({ prefix: "sbilab-shards-" });
  try {
    await t.step(
      "the merged completed count equals the server's own count, percentiles exact",
      async () => {
        answered = 0;
        // every shard measures from one wall-clock time, so their windows overlap however
        // late each process starts (a few seconds on a loaded machine)
        const startAt = String(Date.now() + 5000);
        const runs = [0, 1, 2, 3].map((i) =>
          shard(
            net,
            i,
            4,
            url,
            ["-n", "4002", "-c", "8", "-m", "4", "--start-at", startAt],
            `${dir}/a-${i}.json`,
          )
        );
        for (const r of runs) {
          const o = await r.out;
          assert.equal(o.code, 0, o.stderr);
        }
        const records = await Promise.all(
          [0, 1, 2, 3].map((i) => readRecord(`${dir}/a-${i}.json`)),
        );
        // first shards take the remainder: 4002 = 1001 + 1001 + 1000 + 1000
        assert.deepEqual(records.map((r) => r.result.completed), [1001, 1001, 1000, 1000]);
        assert.deepEqual(records.map((r) => r.plan.connections), [2, 2, 2, 2]);
        assert.equal(new Set(records.map((r) => r.shard!.host)).size, 1, "one box");
        const merged = await runLab([
          "report",
          "merge",
          ...[0, 1, 2, 3].map((i) => `${dir}/a-${i}.json`),
          "-o",
          `${dir}/a.json`,
          "--late-ms",
          "60000",
        ]);
        assert.equal(merged.code, 0, merged.stderr);
        assert.match(
          dec.decode(merged.stdout),
          /4002 sent, 4002 completed: 4002 succeeded, 0 failed, 0 errors/,
        );
        const run = await readRecord(`${dir}/a.json`);
        assert.equal(run.result.completed, answered);
        assert.equal(answered, 4002);
        assert.equal(run.result.errors, 0);
        // one histogram fed every value every shard's engine kept
        const one = histogramFromPairs(records.flatMap((r) => r.result.latencyBuckets));
        assert.deepEqual(run.result.latency, summarize(one));
      },
    );

    await t.step("shards whose windows do not overlap are refused with one line", async () => {
      const late = await readRecord(`${dir}/a-1.json`);
      late.shard!.window.startMs += 3_600_000;
      late.shard!.window.endMs += 3_600_000;
      await Deno.writeTextFile(`${dir}/a-1-late.json`, JSON.stringify(late));
      const r = await runLab(["report", "merge", `${dir}/a-0.json`, `${dir}/a-1-late.json`]);
      assert.equal(r.code, 2);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.match(
        r.stderr,
        /Shard windows do not overlap: shard 0\/4 ended at .*, shard 1\/4 started at/,
      );
    });

    await t.step("the aggregate open-loop rate is the plan's within 5 %", async () => {
      const startAt = Date.now() + 6000;
      const runs = [0, 1, 2, 3].map((i) =>
        shard(net, i, 4, url, [
          "--rate",
          "2000",
          "-D",
          "2s",
          "--warm-up",
          "300ms",
          "-c",
          "4",
          "-m",
          "8",
          "--start-at",
          String(startAt),
        ], `${dir}/b-${i}.json`)
      );
      for (const r of runs) {
        const o = await r.out;
        assert.equal(o.code, 0, o.stderr);
      }
      const files = [0, 1, 2, 3].map((i) => `${dir}/b-${i}.json`);
      const records = await Promise.all(files.map(readRecord));
      for (const r of records) {
        assert.equal(r.plan.rate, 500);
        // never before the planned start, and only after the shard's own warm-up
        assert.ok(
          r.shard!.window.startMs >= startAt,
          `started ${startAt - r.shard!.window.startMs} ms early`,
        );
        assert.ok(r.result.warmupCompleted > 0);
        assert.equal(r.shard!.startAtMs, startAt);
      }
      // a shard that booted too slowly to warm up before the start is named late, never hidden
      const late = records.filter((r) => r.shard!.window.startMs - startAt > 250);
      const merged = await runLab(["report", "merge", ...files, "-o", `${dir}/b.json`]);
      assert.equal(merged.code, late.length ? 1 : 0, merged.stderr);
      for (const r of late) {
        assert.match(
          merged.stderr,
          new RegExp(`shard ${r.shard!.index}/4 \\(\\S+\\) started [\\d.]+ s late`),
        );
      }
      const run = await readRecord(`${dir}/b.json`);
      assert.ok(
        Math.abs(run.result.reqPerSec - 2000) / 2000 < 0.05,
        `aggregate ${run.result.reqPerSec} req/s`,
      );
    });

    await t.step("a shard that dies mid-run makes the merged run partial, naming it", async () => {
      answered = 0;
      const startAt = Date.now() + 6000;
      const args = ["--rate", "1000", "-D", "3s", "-c", "4", "--start-at", String(startAt)];
      const runs = [0, 1, 2, 3].map((i) => shard(net, i, 4, url, args, `${dir}/c-${i}.json`));
      // once the run is under way, shard 2 dies without a record
      await until(() => answered > 600, "requests reach the server", 15_000);
      runs[2].child.kill("SIGKILL");
      for (const [i, r] of runs.entries()) {
        const o = await r.out;
        if (i !== 2) assert.equal(o.code, 0, o.stderr);
      }
      const files = [0, 1, 3].map((i) => `${dir}/c-${i}.json`);
      const merged = await runLab(["report", "merge", ...files, "-o", `${dir}/c.json`]);
      assert.equal(merged.code, 1);
      assert.match(merged.stderr, /partial run: shard 2\/4 sent no record/);
      const run = await readRecord(`${dir}/c.json`);
      assert.equal(run.result.partial, true);
      assert.deepEqual(run.merge!.missing, [2]);
      assert.match(dec.decode(merged.stdout), /^PARTIAL: /);
    });
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lab load refuses a shard it cannot run with one line and exit 2", async () => {
  const url = "http://127.0.0.1:9/";
  const cases: [string[], Record<string, string>, RegExp][] = [
    [["--shard", "4/4"], {}, /shard index must be 0-3, got 4/],
    [["--shard", "1/4", "-c", "2"], {}, /4 shards need at least 4 connections, got 2/],
    [["--shard", "0/3", "-c", "3", "-n", "2"], {}, /3 shards need at least 3 requests, got 2/],
    [[], { JOB_COMPLETION_INDEX: "1" }, /JOB_COMPLETION_INDEX is set: give the shard count/],
    [["--shard-count", "2"], { JOB_COMPLETION_INDEX: "2" }, /shard index must be 0-1, got 2/],
    [["--start-at", "soon"], {}, /--start-at must be an ISO time or ms since the epoch, got soon/],
  ];
  const [cmd, ...prefix] = labCommand();
  for (const [args, env, want] of cases) {
    const out = await new Deno.Command(cmd, {
      args: [...prefix, "load", url, "-n", "10", ...args],
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = dec.decode(out.stderr).trim();
    assert.equal(out.code, 2, `${args.join(" ")}: ${err}`);
    assert.equal(err.split("\n").length, 1, err);
    assert.match(err, want);
  }
});
