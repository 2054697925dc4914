/**
 * CLI behaviour, tested by spawning `lab` as a user would: serve prints one
 * line per listener, request prints bodies like curl, certs writes PEM files,
 * doctor reports, and bad input gives one line on stderr and a non-zero exit.
 */
import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import type { LabServeOptions } from "../lib/lab_serve.ts";
import {
  directCall,
  freePort,
  needsTool,
  ROOT,
  runLab,
  runTool,
  startLabServe,
} from "./support.ts";

const dec = new TextDecoder();
const NF_ID = "3fa85f64-5717-4562-b3fc-2c963f66afa6";

const lab = runLab;

/** Starts `lab serve` and resolves with its listener URLs once they are printed. */
async function startServe(options: LabServeOptions) {
  const srv = await startLabServe(options);
  return { urls: srv.urls as Record<string, string>, stop: srv.stop };
}

function assertOneLineError(r: { code: number; stderr: string }, pattern: RegExp, code = 1) {
  assert.equal(r.code, code, `exit status for:\n${r.stderr}`);
  // progress: lines (stderr is not a terminal here) may come first; the error is one line
  const lines = r.stderr.trim().split("\n").filter((l) =>
    !l.startsWith("(run lab ") && !l.startsWith("progress: ")
  );
  assert.equal(lines.length, 1, `expected one line, got:\n${r.stderr}`);
  assert.match(lines[0], pattern);
  assert.doesNotMatch(r.stderr, /^\s+at\s|Stack backtrace/m);
}

Deno.test("lab serve prints a URL per listener and lab request fetches the handler's bytes over h2c and h2-tls (verified, -k, and refused without the CA)", async () => {
  const state = await Deno.makeTempDir();
  const srv = await startServe({ transports: ["h2c", "h2-tls"], stateDir: state });
  try {
    assert.match(srv.urls["h2c"], /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(srv.urls["h2-tls"], /^https:\/\/127\.0\.0\.1:\d+$/);
    const want = (await directCall(createHandler(), "GET", "/nbench/v1/payload?size=300")).body;
    const plain = await lab(["request", `${srv.urls["h2c"]}/nbench/v1/payload?size=300`]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.deepEqual(plain.stdout, want);
    const tls = await lab([
      "request",
      "--ca",
      `${state}/ca.pem`,
      "-i",
      `${srv.urls["h2-tls"]}/nbench/v1/payload?size=300`,
    ]);
    assert.equal(tls.code, 0, tls.stderr);
    const text = dec.decode(tls.stdout);
    assert.match(text, /^HTTP\/2 200\r\n/);
    assert.match(text, /content-type: application\/json/);
    assert.ok(text.endsWith(dec.decode(want)));
    // -k skips verification in the native client itself; without --ca the dev CA is unknown
    const insecure = await lab([
      "request",
      "-k",
      `${srv.urls["h2-tls"]}/nbench/v1/payload?size=300`,
    ]);
    assert.equal(insecure.code, 0, insecure.stderr);
    assert.deepEqual(insecure.stdout, want);
    assertOneLineError(
      await lab(["request", `${srv.urls["h2-tls"]}/nbench/v1/payload?size=300`]),
      /^error: h2-tls request to .* failed: TLS handshake failed: .*(issuer|trusted)/,
      60,
    );
    const post = await lab([
      "request",
      "-X",
      "PUT",
      "-H",
      "Content-Type: application/json",
      "-d",
      `{"nfInstanceId":"${NF_ID}","nfType":"AMF","nfStatus":"REGISTERED"}`,
      "-i",
      `${srv.urls["h2c"]}/nnrf-nfm/v1/nf-instances/${NF_ID}`,
    ]);
    assert.equal(post.code, 0, post.stderr);
    assert.match(
      dec.decode(post.stdout),
      new RegExp(`^HTTP/2 201\r\n[\\s\\S]*location: \\S*/nnrf-nfm/v1/nf-instances/${NF_ID}`),
    );
  } finally {
    const status = await srv.stop();
    assert.equal(status.code, 0, "serve exits cleanly on SIGTERM");
    await Deno.remove(state, { recursive: true });
  }
});

Deno.test({
  name:
    "lab serve's h3 sends gtlsclient --max-udp-payload-size=1452 its 16 KiB and 1 MiB answers byte for byte",
  ignore: needsTool("gtlsclient", "ngtcp2-client") || H3_SKIP !== null,
  fn: async () => {
    const state = await Deno.makeTempDir();
    const dir = await Deno.makeTempDir();
    const srv = await startServe({ transports: ["h3"], stateDir: state });
    try {
      const url = new URL(srv.urls["h3"]);
      const sizes = [16384, 1048576];
      const r = await runTool("gtlsclient", [
        "-q",
        "--exit-on-all-streams-close",
        "--max-udp-payload-size=1452",
        "--timeout=10s",
        "--download",
        dir,
        url.hostname,
        url.port,
        ...sizes.map((n) => `${url.origin}/nbench/v1/payload?size=${n}`),
      ]);
      assert.equal(r.code, 0, r.stderr);
      for (const n of sizes) {
        const want =
          (await directCall(createHandler(), "GET", `/nbench/v1/payload?size=${n}`)).body;
        assert.deepEqual(await Deno.readFile(`${dir}/payload?size=${n}`), want);
      }
    } finally {
      await srv.stop();
      await Deno.remove(state, { recursive: true });
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "lab serve --h3-retry answers gtlsclient's first Initial with a Retry, then serves it",
  ignore: needsTool("gtlsclient", "ngtcp2-client") || H3_SKIP !== null,
  fn: async () => {
    const state = await Deno.makeTempDir();
    const srv = await startServe({
      transports: ["h3"],
      stateDir: state,
      extraArgs: ["--h3-retry"],
    });
    try {
      const url = new URL(srv.urls["h3"]);
      const r = await runTool("gtlsclient", [
        "--exit-on-all-streams-close",
        "--timeout=10s",
        url.hostname,
        url.port,
        `${url.origin}/nbench/v1/payload?size=100`,
      ]);
      assert.equal(r.code, 0, r.stderr.slice(-2000));
      assert.match(r.stderr, /pkt rx .*type=Retry/);
    } finally {
      await srv.stop();
      await Deno.remove(state, { recursive: true });
    }
  },
});

Deno.test("lab request --data-binary reads a body from @FILE and keeps binary bytes intact", async () => {
  const state = await Deno.makeTempDir();
  const srv = await startServe({ transports: ["h2c"], stateDir: state });
  try {
    const data = crypto.getRandomValues(new Uint8Array(40_000));
    await Deno.writeFile(`${state}/body.bin`, data);
    const r = await lab([
      "request",
      "-H",
      "content-type: application/octet-stream",
      "--data-binary",
      `@${state}/body.bin`,
      `${srv.urls["h2c"]}/nbench/v1/echo`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout, data);
  } finally {
    await srv.stop();
    await Deno.remove(state, { recursive: true });
  }
});

Deno.test("lab serve --help prints the limits every server applies, as resolveServerLimits states them", async () => {
  const { resolveServerLimits, serverLimitRows } = await import("../transports/server_limits.ts");
  const r = await lab(["serve", "--help"]);
  assert.equal(r.code, 0, r.stderr);
  const help = dec.decode(r.stdout);
  const rows = serverLimitRows(resolveServerLimits());
  assert.equal(rows.length, 8);
  for (const row of rows) {
    const line = help.split("\n").find((l) =>
      l.trim().startsWith(`${row.option} `) && /\d/.test(l) && !l.includes("<")
    );
    assert.ok(line, `no limit line for ${row.option} in:\n${help}`);
    assert.match(line, new RegExp(`\\s${row.value}(\\s|,|$)`), line);
  }
  assert.match(help, /--idle-timeout\s+60000 ms/);
  assert.match(help, /--max-queued-responses\s+67108864 bytes/);
});

Deno.test("lab serve refuses a port in use with one line", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = (l.addr as Deno.NetAddr).port;
    const r = await lab(["serve", "--transports", "h2c", "--h2c-port", String(port)]);
    assertOneLineError(r, new RegExp(`error: .*${port}.*in use`, "i"));
  } finally {
    l.close();
  }
});

/** Bad input for `lab`: case name, arguments, the one line it must print, the exit code. */
const ERROR_CASES: [string, string[], RegExp, number][] = [
  ["bad URL", ["request", "not a url"], /error: Invalid URL/, 3],
  ["bad scheme", ["request", "ftp://x/"], /error: Unsupported scheme ftp:/, 3],
  [
    "unreachable host",
    ["request", "--timeout", "3000", `http://127.0.0.1:${freePort()}/x`],
    /error: h2c request .* failed/,
    7,
  ],
  [
    "unreadable body file",
    ["request", "-d", "@/nonexistent/file", "http://127.0.0.1:9/"],
    /error: Cannot read \/nonexistent\/file/,
    1,
  ],
  [
    "unreadable cert",
    [
      "serve",
      "--transports",
      "h2-tls",
      "--tls-port",
      "0",
      "--cert",
      "/nonexistent.pem",
      "--key",
      "/nonexistent.key",
    ],
    /error: Cannot read \/nonexistent\.pem/,
    1,
  ],
  [
    "header without a colon",
    ["request", "-H", "nocolon", "http://127.0.0.1:9/"],
    /^error: -H must be a header like 'Name: value', got 'nocolon'$/,
    2,
  ],
  [
    "header name with a space",
    ["request", "-H", "bad header", "http://127.0.0.1:9/"],
    /^error: -H must be a header like 'Name: value', got 'bad header'$/,
    2,
  ],
  [
    "timeout not a number",
    ["request", "--timeout", "abc", "http://127.0.0.1:9/"],
    /--timeout/,
    2,
  ],
  [
    "unknown transport",
    ["serve", "--transports", "h4"],
    /^error: --transports: Unknown transport h4/,
    2,
  ],
  ["bogus transport list", ["serve", "--transports", "bogus"], /Unknown transport bogus/, 2],
  ["bad port", ["serve", "--h2c-port", "70000"], /error: --h2c-port must be a port/, 2],
  [
    "host not of this machine",
    ["serve", "--transports", "h2c", "--h2c-port", "0", "--host", "192.0.2.1"],
    /error: --host 192\.0\.2\.1 is not an address of this machine/,
    2,
  ],
  ["bench with an unknown transport", ["bench", "--transports", "bogus"], /bogus/, 2],
  [
    "bench with a bad number",
    ["bench", "--samples", "x"],
    /^error: --samples must be a whole number ≥ 2, got x$/,
    2,
  ],
  [
    "bench with an MTU below IPv6's minimum",
    ["bench", "--mtu", "900"],
    /^error: --mtu must be a whole number 1280-65535, got 900$/,
    2,
  ],
  [
    "link selftest with too few probes",
    ["link", "selftest", "--packets", "5"],
    /^error: --packets must be a whole number 100-1000000, got 5$/,
    2,
  ],
  [
    "link with an unknown backend",
    ["link", "up", "--link-backend", "veth"],
    /^error: --link-backend must be one of relay, netem, got veth$/,
    2,
  ],
  [
    "load with a fractional connection count",
    ["load", "http://127.0.0.1:9/", "-n", "5", "-c", "1.5"],
    /^error: -c must be a whole number 1-100000, got 1\.5$/,
    2,
  ],
  ["report of a missing file", ["report", "/nonexistent/run.json"], /Cannot read/, 2],
  [
    "link with a bad spec",
    ["link", "selftest", "--link", "wam"],
    /^error: --link: Unknown link profile "wam"/,
    2,
  ],
  [
    "h3 datagram size below QUIC's minimum",
    ["serve", "--transports", "h3", "--h3-max-udp-payload", "1000"],
    /^error: --h3-max-udp-payload must be a whole number 1200-65527, got 1000$/,
    2,
  ],
  [
    "soak with an unknown attack",
    ["soak", "--attacks", "bogus"],
    /^error: --attacks must be one of .*, got bogus$/,
    2,
  ],
  [
    "soak with a bad time",
    ["soak", "--time", "soon"],
    /^error: --time must be a duration like 500ms, 3s or 2m \(bare number = s\), got soon$/,
    2,
  ],
  ["unknown command", ["frobnicate"], /error: unknown command 'frobnicate'/, 2],
];

Deno.test("lab gives one clear line, exit 1 for failures, curl's status for a failed request and exit 2 for usage errors", async (t) => {
  for (const [name, args, pattern, code] of ERROR_CASES) {
    await t.step(name, async () => assertOneLineError(await lab(args), pattern, code));
  }
});

Deno.test("lab link runs through main.ts and lists its profiles", async () => {
  const r = await lab(["link", "profiles"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    dec.decode(r.stdout),
    /^wan\s+50 ms\s+0\.1 %\s+unlimited\s.*delay=25ms,loss=0\.1%$/m,
  );
});

Deno.test("lab certs writes a CA, server and client certificate that lab serve can use", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const r = await lab(["certs", "--out", dir]);
    assert.equal(r.code, 0, r.stderr);
    for (const f of ["ca.pem", "server.pem", "server-key.pem", "client.pem", "client-key.pem"]) {
      const text = await Deno.readTextFile(`${dir}/${f}`);
      assert.match(text, /^-----BEGIN (CERTIFICATE|PRIVATE KEY)-----/);
    }
    const srv = await startServe({
      transports: ["h2-tls"],
      cert: `${dir}/server.pem`,
      key: `${dir}/server-key.pem`,
      ca: `${dir}/ca.pem`,
      mtls: true,
    });
    try {
      const url = `${srv.urls["h2-tls"]}/nbench/v1/payload?size=10`;
      const anon = await lab(["request", "--ca", `${dir}/ca.pem`, "--timeout", "3000", url]);
      assert.notEqual(anon.code, 0, "mTLS server must refuse a client without a certificate");
      const ok = await lab([
        "request",
        "--ca",
        `${dir}/ca.pem`,
        "--cert",
        `${dir}/client.pem`,
        "--key",
        `${dir}/client-key.pem`,
        url,
      ]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(ok.stdout.length, 10);
    } finally {
      await srv.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lab doctor reports the runtime and the tools it looked for", async () => {
  const r = await lab(["doctor"]);
  assert.equal(r.code, 0, r.stderr);
  const text = dec.decode(r.stdout);
  assert.match(text, new RegExp(`^deno\\s+${Deno.version.deno.replace(/\./g, "\\.")}`, "m"));
  for (
    const row of [
      "user",
      "libngtcp2",
      "libnghttp3",
      "h3 module",
      "nghttpd",
      "/dev/net/tun",
      "tc netem",
    ]
  ) {
    assert.match(text, new RegExp(`^${row.replace(/\//g, "\\/")}\\s+\\S`, "m"), row);
  }
});

Deno.test("deno task compile refuses a DENORT_BIN that does not exist with one line", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", `${ROOT}/scripts/compile.ts`],
    env: { DENORT_BIN: "/nonexistent/denort" },
    stdout: "piped",
    stderr: "piped",
  });
  const out = await child.output();
  assertOneLineError(
    { code: out.code, stderr: dec.decode(out.stderr) },
    /error: DENORT_BIN points to \/nonexistent\/denort/,
  );
});

Deno.test("lab load drives lab serve over h2c, h2-TLS and h3 with matching counts and saves JSON", async () => {
  const state = await Deno.makeTempDir();
  const srv = await startServe({ transports: ["h2c", "h2-tls", "h3"], stateDir: state });
  try {
    const path = "/nbench/v1/payload?size=256";
    for (
      const [name, extra] of [
        ["h2c", []],
        ["h2-tls", ["--ca", `${state}/ca.pem`]],
        ["h3", ["--h3", "--ca", `${state}/ca.pem`]],
      ] as const
    ) {
      const url = srv.urls[name].replace("localhost", "127.0.0.1") + path;
      const json = `${state}/${name}.json`;
      const r = await lab([
        "load",
        url,
        "-n",
        "300",
        "-c",
        "2",
        "-m",
        "4",
        ...extra,
        "--json",
        json,
      ]);
      assert.equal(r.code, 0, r.stderr);
      const out = dec.decode(r.stdout);
      assert.match(out, /300 sent, 300 completed: 300 succeeded, 0 failed, 0 errors/);
      assert.match(out, /status codes: 300 × 200/);
      assert.match(out, /latency histogram/);
      const saved = JSON.parse(await Deno.readTextFile(json));
      assert.equal(saved.engine, "native");
      assert.equal(saved.result.protocol, name === "h3" ? "h3" : "h2");
      assert.equal(saved.result.sent, 300);
      assert.equal(saved.result.latency.count, 300);
      assert.equal(saved.result.bodyBytesIn, 300 * 256);
    }
  } finally {
    await srv.stop();
    await Deno.remove(state, { recursive: true });
  }
});

Deno.test("lab load: argument errors exit 2, a malformed URL 3 and a refused connection 7, each with one line", async () => {
  const port = freePort();
  assertOneLineError(await lab(["load", "not a url", "-n", "5"]), /Invalid URL/, 3);
  for (
    const [args, pattern] of [
      [["load", `http://127.0.0.1:${port}/`, "-n", "5", "-D", "1s"], /either -n/],
      [["load", `http://127.0.0.1:${port}/`], /either -n/],
      [["load", `http://127.0.0.1:${port}/`, "-n", "0"], /-n must be/],
      [["load", `http://127.0.0.1:${port}/`, "-D", "soon"], /-D must be a duration/],
      [["load", `http://127.0.0.1:${port}/`, "-n", "5", "--h3"], /needs an https/],
      [["load", `http://127.0.0.1:${port}/`, "-n", "5", "--rate", "-3"], /--rate/],
      [["load", `http://127.0.0.1:${port}/`, "-n", "5", "-d", "@/nonexistent"], /Cannot read/],
    ] as const
  ) {
    const r = await lab([...args]);
    assertOneLineError(r, pattern, 2);
  }
  const r = await lab(["load", `http://127.0.0.1:${port}/`, "-n", "5"]);
  assertOneLineError(r, /refused.*partial/i, 7);
  assert.match(dec.decode(r.stdout), /^PARTIAL: /);
});

Deno.test("lab report A B --fail-on-regression: two runs of the same code report no change and exit 0; a planted regression exits 1", async () => {
  const { syntheticRtt } = await import("./synthetic_run.ts");
  const dir = await Deno.makeTempDir({ prefix: "sbilab-aa-" });
  try {
    const write = (name: string, run: unknown) =>
      Deno.writeTextFile(`${dir}/${name}`, JSON.stringify(run)).then(() => `${dir}/${name}`);
    const a = await write("a.json", syntheticRtt(21));
    const b = await write("b.json", syntheticRtt(22));
    const c = await write("c.json", syntheticRtt(23, { h3Cost: 1.3 * 1.25 }));
    const same = await lab(["report", a, b, "--fail-on-regression"]);
    const text = dec.decode(same.stdout);
    assert.equal(same.code, 0, `${text}\n${same.stderr}`);
    assert.match(text, /^No change: no row or ratio moved/);
    assert.doesNotMatch(text, /regressed/);
    const worse = await lab(["report", a, c, "--fail-on-regression"]);
    const out = dec.decode(worse.stdout);
    assert.equal(worse.code, 1, out);
    assert.match(out, /^\d+ regressed \(h3 ÷ h2-tls 256 B/);
    assert.match(worse.stderr, /row\(s\) or ratio\(s\) regressed/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
