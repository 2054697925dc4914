/**
 * The CLI against careless hands and wrong answers: a 4xx counted as a
 * failure, an open loop that cannot keep its rate saying so, limits refused
 * before any traffic, stray arguments and unwritable outputs refused before
 * any work, comparisons of unlike runs refused, curl's exit statuses.
 */
import assert from "node:assert/strict";
import { freePort, runLab, startLabServe } from "./support.ts";
import { syntheticRtt } from "./synthetic_run.ts";
import { labCommand } from "../lib/lab_serve.ts";

const dec = new TextDecoder();

/** The error lines of stderr (progress lines and the help line left out). */
function errorLines(stderr: string): string[] {
  return stderr.trim().split("\n").filter((l) =>
    l !== "" && !l.startsWith("progress: ") && !l.startsWith("(run lab")
  );
}

Deno.test("lab load counts a 404 and a 400 as failed, keeps the counts in its record and exits 22", async () => {
  const srv = await startLabServe({ transports: ["h2c"] });
  const dir = await Deno.makeTempDir({ prefix: "sbilab-status-" });
  try {
    const base = srv.urls["h2c"]!.replace("localhost", "127.0.0.1");
    for (
      const [path, status] of [["/nope", "404"], ["/nbench/v1/payload?size=abc", "400"]] as const
    ) {
      const json = `${dir}/${status}.json`;
      const r = await runLab(["load", base + path, "-n", "40", "-q", "--json", json]);
      const out = dec.decode(r.stdout);
      assert.equal(r.code, 22, `${out}\n${r.stderr}`);
      assert.match(out, new RegExp(`0 succeeded, 40 failed \\(40 × ${status}\\)`));
      assert.deepEqual(errorLines(r.stderr).filter((l) => l.startsWith("error")), [
        `error: 40 of 40 requests failed (40 × ${status}; success is status 2xx,3xx); --max-failures 0`,
      ]);
      const saved = JSON.parse(await Deno.readTextFile(json));
      assert.deepEqual(saved.result.status, { [status]: 40 });
      assert.equal(saved.plan.ok, "2xx,3xx");
      assert.deepEqual(saved.outcome, {
        succeeded: 0,
        failed: 40,
        errors: 0,
        failedByStatus: [[status, 40]],
      });
    }
    // the same 404s, accepted by --ok or tolerated by --max-failures, exit 0
    const accepted = await runLab(["load", base + "/nope", "-n", "10", "-q", "--ok", "2xx,404"]);
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.match(dec.decode(accepted.stdout), /10 succeeded, 0 failed/);
    const tolerated = await runLab([
      "load",
      base + "/nope",
      "-n",
      "10",
      "-q",
      "--max-failures",
      "10",
    ]);
    assert.equal(tolerated.code, 0, tolerated.stderr);
  } finally {
    await srv.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lab load -D with a rate it cannot keep stops sending at the duration and reports the sends not made", async () => {
  const srv = await startLabServe({ transports: ["h2c"] });
  const dir = await Deno.makeTempDir({ prefix: "sbilab-rate-" });
  try {
    const url = srv.urls["h2c"]!.replace("localhost", "127.0.0.1") + "/nbench/v1/payload?size=16";
    const json = `${dir}/run.json`;
    // one stream in flight caps the rate far below 10M req/s on any machine
    const r = await runLab(["load", url, "-D", "1s", "--rate", "10000000", "--json", json]);
    const out = dec.decode(r.stdout);
    assert.equal(r.code, 0, `${out}\n${r.stderr}`);
    const saved = JSON.parse(await Deno.readTextFile(json));
    const notMade = 10_000_000 - saved.result.sent;
    assert.ok(notMade > 0);
    const line = out.split("\n").find((l) => l.startsWith("open loop: reached"));
    assert.ok(line, out);
    assert.match(line, /^open loop: reached \S+ of 10\.0M req\/s; [\d,]+ sends not made$/);
    assert.equal(Number(/([\d,]+) sends/.exec(line)![1].replaceAll(",", "")), notMade);
    // said at once, while it ran
    assert.match(r.stderr, /open loop: behind schedule/);
    assert.equal(saved.result.stopped, false);
    assert.equal(saved.result.partial, false);
  } finally {
    await srv.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lab load refuses -c above the open-file limit and -n below -c before any traffic", async () => {
  const port = freePort(); // nothing listens: any attempt would end in "refused", exit 7
  const [cmd, ...prefix] = labCommand();
  const argv = [cmd, ...prefix, "load", `http://127.0.0.1:${port}/`, "-n", "2000", "-c", "2000"];
  const out = await new Deno.Command("sh", {
    args: ["-c", 'ulimit -Sn 256 && ulimit -Hn 512 && exec "$@"', "sh", ...argv],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = dec.decode(out.stderr);
  assert.equal(out.code, 2, stderr);
  assert.deepEqual(errorLines(stderr), [
    "error: -c 2000 needs about 2064 open files (one TCP socket per connection) but the limit " +
    "is 512 (hard 512): lower -c or raise the limit (ulimit -n)",
  ]);
  const few = await runLab(["load", `http://127.0.0.1:${port}/`, "-n", "10", "-c", "20"]);
  assert.equal(few.code, 2, few.stderr);
  assert.deepEqual(errorLines(few.stderr), [
    "error: -n 10 is below -c 20: every connection needs at least one request",
  ]);
});

Deno.test("a stray argument and an unwritable output path fail before any work, naming the command's help", async () => {
  const port = freePort();
  const cases: [string[], string][] = [
    [
      ["bench", "concurrency", "--quick"],
      "error: lab bench takes no arguments, got 'concurrency' as well (did you mean --scenario concurrency?)",
    ],
    [
      ["request", `http://127.0.0.1:${port}/a`, `http://127.0.0.1:${port}/b`],
      `error: lab request takes one argument (url), got 'http://127.0.0.1:${port}/b' as well`,
    ],
    [
      ["load", `http://127.0.0.1:${port}/`, "-n", "5", "--json", "/nonexistent/x.json"],
      "error: --json /nonexistent/x.json: the folder /nonexistent does not exist",
    ],
    [
      ["bench", "--quick", "--html", "/nonexistent/x.html"],
      "error: --html /nonexistent/x.html: the folder /nonexistent does not exist",
    ],
    [
      ["soak", "--time", "2", "--json", "/nonexistent/soak.json"],
      "error: --json /nonexistent/soak.json: the folder /nonexistent does not exist",
    ],
  ];
  for (const [i, [args, line]] of cases.entries()) {
    const r = await runLab(args);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.deepEqual(errorLines(r.stderr), [line]);
    // a stray argument names the command's own help, as commander's errors do
    if (i < 2) {
      assert.match(r.stderr, new RegExp(`^\\(run lab ${args[0]} --help for usage\\)$`, "m"));
    }
    assert.equal(dec.decode(r.stdout), "", "nothing ran");
  }
  const unknown = await runLab(["report", "merge", "a.json", "--markdown", "x.md"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /^error: unknown option '--markdown'$/m);
  assert.match(unknown.stderr, /^\(run lab report merge --help for usage\)$/m);
});

Deno.test("lab request and lab load exit with curl's statuses: 3 malformed URL, 7 refused, 22 with -f (status line and headers shown)", async () => {
  const port = freePort();
  for (const args of [["request", "ht!tp://x"], ["load", "ht!tp://x", "-n", "1"]]) {
    const r = await runLab(args);
    assert.equal(r.code, 3, `${args[0]}: ${r.stderr}`);
  }
  for (
    const args of [["request", `http://127.0.0.1:${port}/`], [
      "load",
      `http://127.0.0.1:${port}/`,
      "-n",
      "1",
    ]]
  ) {
    const r = await runLab(args);
    assert.equal(r.code, 7, `${args[0]}: ${r.stderr}`);
  }
  const srv = await startLabServe({ transports: ["h2c"] });
  try {
    const r = await runLab(["request", "-f", "-i", `${srv.urls["h2c"]}/nope`]);
    assert.equal(r.code, 22, r.stderr);
    const out = dec.decode(r.stdout);
    assert.match(out, /^HTTP\/2 404\r\n/);
    assert.match(out, /\r\ncontent-type: application\/problem\+json\r\n/);
    assert.ok(out.endsWith("\r\n\r\n"), "no body after the head");
    assert.match(r.stderr, /^error: The requested URL returned error: 404$/m);
  } finally {
    await srv.stop();
  }
});

Deno.test("lab report refuses to compare unlike runs, raises the threshold to a run's stated noise and never gates on a quick run", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sbilab-cmp-" });
  try {
    const write = (name: string, run: unknown) =>
      Deno.writeTextFile(`${dir}/${name}`, JSON.stringify(run)).then(() => `${dir}/${name}`);
    const a = syntheticRtt(31);
    const worse = syntheticRtt(32, { h3Cost: 1.3 * 1.25 });
    const study = { ...syntheticRtt(33), study: { budgetMs: 1 } };
    const conc = { ...syntheticRtt(34), config: { ...a.config, scenario: "concurrency" } };
    const pa = await write("a.json", a);
    for (
      const [other, why] of [
        [await write("study.json", study), "A is a lab bench run and B is a lab study run"],
        [await write("conc.json", conc), "A ran --scenario rtt and B --scenario concurrency"],
      ]
    ) {
      const r = await runLab(["report", pa, other, "--fail-on-regression"]);
      assert.equal(r.code, 2, r.stderr);
      assert.deepEqual(errorLines(r.stderr), [`error: Cannot compare ${pa} with ${other}: ${why}`]);
      assert.equal(dec.decode(r.stdout), "");
    }
    // the planted 25 % regression gates two careful runs ...
    const pw = await write("worse.json", worse);
    const gated = await runLab(["report", pa, pw, "--fail-on-regression"]);
    assert.equal(gated.code, 1, dec.decode(gated.stdout));
    // ... but not when a run said "expect ±70 %"
    const noisy = structuredClone(a);
    noisy.rounds!.noise = {
      ...noisy.rounds!.noise,
      noisy: true,
      expectPercent: 70,
      reasons: ["x"],
    };
    const within = await runLab([
      "report",
      await write("noisy.json", noisy),
      pw,
      "--fail-on-regression",
    ]);
    const text = dec.decode(within.stdout);
    assert.equal(within.code, 0, text);
    assert.match(text, /noise threshold 70\.0 %/);
    assert.doesNotMatch(text, /regressed/);
    // ... nor when one of them was --quick
    const quick = structuredClone(a);
    quick.config.quick = true;
    const q = await runLab([
      "report",
      await write("quick.json", quick),
      pw,
      "--fail-on-regression",
    ]);
    assert.equal(q.code, 0, dec.decode(q.stdout));
    assert.match(dec.decode(q.stdout), /^A was a quick run \(--quick\)/m);
    assert.match(q.stderr, /^not gating: .*quick\.json was a quick run/m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Runs `lab serve` with `args` until `enough(stdout, stderr)` holds or it exits; then stops it. */
async function serveUntil(
  args: string[],
  enough: (out: string, err: string) => boolean,
): Promise<{ out: string; err: string; code: number }> {
  const [cmd, ...prefix] = labCommand();
  const child = new Deno.Command(cmd, {
    args: [...prefix, "serve", "--host", "127.0.0.1", ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "", err = "";
  const { promise: seen, resolve } = Promise.withResolvers<void>();
  const pump = (s: ReadableStream<Uint8Array>, add: (t: string) => void) =>
    s.pipeThrough(new TextDecoderStream()).pipeTo(
      new WritableStream({
        write: (t) => {
          add(t);
          if (enough(out, err)) resolve();
        },
      }),
    );
  const done = Promise.all([
    pump(child.stdout, (t) => (out += t)),
    pump(child.stderr, (t) => (err += t)),
  ]);
  const status = await Promise.race([seen.then(() => undefined), child.status]);
  if (status === undefined) child.kill("SIGTERM");
  const { code } = await child.status;
  await done;
  return { out, err, code };
}

Deno.test("lab serve binds every port before it prints any listening line", async () => {
  const busy = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = (busy.addr as Deno.NetAddr).port;
    const r = await serveUntil(
      ["--transports", "h2c,h2-tls", "--h2c-port", "0", "--tls-port", String(port)],
      () => false,
    );
    assert.equal(r.code, 1, r.err);
    assert.equal(r.out, "", "no listening line from a server that failed to start");
    assert.match(r.err, new RegExp(`error: .*${port}.*in use`, "i"));
  } finally {
    busy.close();
  }
});

Deno.test("lab serve serves h2c, h2-TLS and h3 by default, and names quinn's datagram sizes on the deno stack", async () => {
  const { availableTransports } = await import("../transports/mod.ts");
  const native = await availableTransports("native");
  const lines = (out: string) => out.split("\n").filter((l) => / listening on /.test(l));
  const r = await serveUntil(
    ["--h2c-port", "0", "--tls-port", "0"],
    (out) => lines(out).length === native.length,
  );
  assert.deepEqual(lines(r.out).map((l) => l.split(" ")[0]), native);
  assert.ok(native.includes("h3"), "the native h3 module is built here (deno task build:native)");
  if (!(await availableTransports("deno")).includes("h3")) return;
  const d = await serveUntil(
    ["--stack", "deno", "--transports", "h3", "--tls-port", "0"],
    (_, err) => /h3 datagrams/.test(err),
  );
  const line = d.err.split("\n").find((l) => l.startsWith("h3 datagrams"));
  assert.equal(
    line,
    "h3 datagrams: quinn's own (1200 B, then its path MTU discovery up to 1452 B); " +
      "Deno exposes neither the setting nor the sizes sent",
  );
});

Deno.test("lab soak counts answers outside --ok as failed, with their statuses, and exits 22", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sbilab-soak-" });
  try {
    const json = `${dir}/soak.json`;
    // lab serve answers 200: with only 201 accepted, every steady answer fails
    const r = await runLab([
      "soak",
      "--time",
      "1",
      "--transports",
      "h2c",
      "--rate",
      "50",
      "--attacks",
      "none",
      "--ok",
      "201",
      "-q",
      "--json",
      json,
    ], 60_000);
    const out = dec.decode(r.stdout);
    assert.equal(r.code, 22, `${out}\n${r.stderr}`);
    const report = JSON.parse(await Deno.readTextFile(json));
    const s = report.summary.h2c;
    assert.ok(s.failed > 0);
    assert.deepEqual(s.status, { "200": s.failed });
    assert.equal(s.served, 0);
    assert.match(out, new RegExp(`^status codes: h2c ${s.failed} × 200$`, "m"));
    assert.match(out, new RegExp(`^requests: 0 succeeded, ${s.failed} failed, 0 errors`, "m"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lab load --cert --key loads an mTLS server over h2-TLS and h3, which refuses it without them", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sbilab-mtls-" });
  try {
    assert.equal((await runLab(["certs", "--out", dir])).code, 0);
    const srv = await startLabServe({
      transports: ["h2-tls", "h3"],
      cert: `${dir}/server.pem`,
      key: `${dir}/server-key.pem`,
      ca: `${dir}/ca.pem`,
      mtls: true,
    });
    try {
      for (const [t, extra] of [["h2-tls", []], ["h3", ["--h3"]]] as const) {
        const url = `${srv.urls[t]}/nbench/v1/payload?size=32`;
        const base = ["load", url, "-n", "20", "-q", "--ca", `${dir}/ca.pem`, ...extra];
        const mine = ["--cert", `${dir}/client.pem`, "--key", `${dir}/client-key.pem`];
        const ok = await runLab([...base, ...mine]);
        const out = dec.decode(ok.stdout);
        assert.equal(ok.code, 0, `${t}: ${out}\n${ok.stderr}`);
        assert.match(out, /20 succeeded, 0 failed, 0 errors/, t);
        assert.match(out, new RegExp(`\\(${t}, 1 conn × 1 streams`), t);
        const anon = await runLab(base);
        assert.notEqual(
          anon.code,
          0,
          `${t}: an mTLS server must refuse a client without a certificate`,
        );
        assert.doesNotMatch(dec.decode(anon.stdout), /20 succeeded/, t);
      }
    } finally {
      await srv.stop();
    }
    const half = await runLab([
      "load",
      "https://127.0.0.1:9/",
      "-n",
      "1",
      "--cert",
      `${dir}/client.pem`,
    ]);
    assert.equal(half.code, 2);
    assert.deepEqual(errorLines(half.stderr), ["error: --cert and --key go together (mutual TLS)"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lab report shows a lab load record alone and refuses to compare one; --help states the defaults that run", async () => {
  const srv = await startLabServe({ transports: ["h2c"] });
  const dir = await Deno.makeTempDir({ prefix: "sbilab-loadrec-" });
  try {
    const json = `${dir}/load.json`;
    const url = srv.urls["h2c"]!.replace("localhost", "127.0.0.1") + "/nbench/v1/payload?size=8";
    assert.equal((await runLab(["load", url, "-n", "30", "-q", "--json", json])).code, 0);
    const shown = await runLab(["report", json]);
    const out = dec.decode(shown.stdout);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(out, new RegExp(`^lab load record: ${url.replace(/[?]/g, "\\?")}$`, "m"));
    assert.match(out, /^requests: 30 sent, 30 completed: 30 succeeded, 0 failed, 0 errors/m);
    const bench = `${dir}/bench.json`;
    await Deno.writeTextFile(bench, JSON.stringify(syntheticRtt(41)));
    const cmp = await runLab(["report", bench, json]);
    assert.equal(cmp.code, 2);
    assert.deepEqual(errorLines(cmp.stderr), [
      `error: ${json} is a lab load record (sbilab-load/1): lab report ${json} shows it alone, ` +
      "lab report merge joins shard records; lab report A B compares bench and study runs",
    ]);
  } finally {
    await srv.stop();
    await Deno.remove(dir, { recursive: true });
  }
  const help = dec.decode((await runLab(["bench", "--help"])).stdout).replace(/\s+/g, " ");
  assert.match(help, /interleaved rtt: 1s before the rounds, quick 200ms/);
  assert.doesNotMatch(help, /default 3s, quick 0\.3s/);
  const typo = await runLab(["bench", "--jsno", "x.json"]);
  assert.equal(typo.code, 2);
  assert.match(
    typo.stderr,
    /^error: unknown option '--jsno'\n\(Did you mean --json\?\)\n\(run lab bench --help for usage\)$/m,
  );
});

Deno.test("lab load exits 28 when every request timed out", async () => {
  // A peer that takes the connection and reads but never answers: no answer can race the timeout
  // (an SBI server answers 504 at the request's 3gpp-Sbi-Max-Rsp-Time, which is the timeout).
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const silent = (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      void conn.readable.pipeTo(new WritableStream()).catch(() => {});
    }
  })();
  try {
    const port = (listener.addr as Deno.NetAddr).port;
    const url = `http://127.0.0.1:${port}/nbench/v1/payload?size=8`;
    const r = await runLab(["load", url, "-n", "2", "--timeout", "200ms", "-q"]);
    assert.equal(r.code, 28, r.stderr);
    assert.match(r.stderr, /^error: 2 of 2 requests failed \(2 without a response;/m);
  } finally {
    listener.close();
    for (const c of conns) {
      try {
        c.close();
      } catch {
        // closed by the client already
      }
    }
    await silent.catch(() => {});
  }
});

Deno.test("lab bench --target exits with curl's statuses: 3 for a malformed URL, 7 when nothing accepts", async () => {
  const bad = await runLab(["bench", "--target", "ftp://x", "--quick"]);
  assert.equal(bad.code, 3, bad.stderr);
  const refused = await runLab(["bench", "--target", `http://127.0.0.1:${freePort()}`, "-q"]);
  assert.equal(refused.code, 7, refused.stderr);
  assert.match(refused.stderr, /^error: No transport of the target answered \(h2c at .*refused/im);
});
