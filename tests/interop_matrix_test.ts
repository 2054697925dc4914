/**
 * `lab interop`: the QUIC interop runner's matrix in both directions with
 * ngtcp2's examples from the same library version (our client against
 * `gtlsserver`, `gtlsclient` against our server), and the command's exit
 * codes. Every case ngtcp2 0.12.1 supports must pass; the rest must say why.
 */
import assert from "node:assert/strict";
import { INTEROP_CASES, type MatrixRow, runInterop } from "../interop/matrix.ts";
import { linkSkipReason } from "../interop/link_cases.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import { freeUdpPort } from "../lib/host.ts";
import { needsTool, runLab } from "./support.ts";

const ignore = H3_SKIP !== null;
const noGtlsClient = ignore || needsTool("gtlsclient", "ngtcp2-client");
const noGtlsServer = ignore || needsTool("gtlsserver", "ngtcp2-server");
const LINK = new Set(["handshakeloss", "transferloss", "blackhole", "rebind-port"]);

/** Cases neither direction can pass with ngtcp2 0.12.1 here, with the words their reason must name. */
const UNSUPPORTED: Record<string, RegExp> = {
  v2: /ngtcp2 0\.12\.1/,
  handshakecorruption: /does not corrupt/,
  transfercorruption: /does not corrupt/,
  amplificationlimit: /first flight/,
  "rebind-addr": /ports only/,
};

/** Checks one direction's matrix: supported cases pass, the others are unsupported with their reason. */
function assertMatrix(rows: MatrixRow[], alsoUnsupported: Record<string, RegExp>) {
  assert.deepEqual(rows.map((r) => r.name), [...INTEROP_CASES]);
  const skip = linkSkipReason();
  const want = { ...UNSUPPORTED, ...alsoUnsupported };
  for (const r of rows) {
    const why = want[r.name] ?? (skip && LINK.has(r.name) ? /^skipped: needs/ : undefined);
    if (why) {
      assert.equal(r.status, "unsupported", `${r.name}: ${r.reason}`);
      assert.match(r.reason, why, r.name);
    } else {
      assert.equal(r.status, "pass", `${r.name}: ${r.reason}`);
    }
  }
}

Deno.test({
  name:
    "lab interop: our h3 client passes every case gtlsserver 0.12.1 supports, loss, blackhole and rebinding across the link included",
  ignore: noGtlsServer,
  fn: async () => {
    const rows = await runInterop({ server: "gtlsserver" });
    assertMatrix(rows, { connectionmigration: /cannot migrate/ });
  },
});

Deno.test({
  name:
    "lab interop --stack deno: our h3 client passes the cases Deno's QUIC server supports, the rest are unsupported with the reason",
  ignore,
  fn: async () => {
    const cases = [
      "handshake",
      "transfer",
      "multiplexing",
      "http3",
      "multiconnect",
      "retry",
      "ecn",
    ];
    const rows = await runInterop({ stack: "deno", cases });
    const by = Object.fromEntries(rows.map((r) => [r.name, r]));
    for (const c of ["handshake", "transfer", "multiplexing", "http3", "multiconnect"]) {
      assert.equal(by[c].status, "pass", `${c}: ${by[c].reason}`);
    }
    assert.equal(by.retry.status, "unsupported");
    assert.match(by.retry.reason, /Deno's QUIC/);
    assert.equal(by.ecn.status, "unsupported");
  },
});

Deno.test({
  name: "lab interop --client --stack deno: gtlsclient fetches from the quinn h3 server",
  ignore: noGtlsClient,
  fn: async () => {
    const rows = await runInterop({
      client: true,
      stack: "deno",
      cases: ["handshake", "transfer", "multiplexing", "http3"],
    });
    for (const r of rows) assert.equal(r.status, "pass", `${r.name}: ${r.reason}`);
  },
});

Deno.test({
  name:
    "lab interop --client: gtlsclient 0.12.1 passes every case it supports against our h3 server, across the link included",
  ignore: noGtlsClient,
  fn: async () => {
    const rows = await runInterop({ client: true });
    const tp = Object.fromEntries(
      INTEROP_CASES.filter((c) => c.startsWith("transportparameters:")).map((
        c,
      ) => [c, /cannot send invalid transport parameters/]),
    );
    assertMatrix(rows, tp);
  },
});

Deno.test({
  name: "lab interop prints the matrix, writes it as JSON and exits 0 when the chosen cases pass",
  ignore,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      const r = await runLab([
        "interop",
        "--cases",
        "handshake,versionnegotiation,v2",
        "--json",
        `${dir}/m.json`,
      ], 60_000);
      const out = new TextDecoder().decode(r.stdout);
      assert.equal(r.code, 0, out + r.stderr);
      assert.match(out, /^handshake +pass +/m);
      assert.match(
        out,
        /^versionnegotiation +pass +Version Negotiation for 0x1a2a3a4a lists .*0x00000001/m,
      );
      assert.match(out, /^v2 +unsupported +.*ngtcp2 0\.12\.1/m);
      const json = JSON.parse(await Deno.readTextFile(`${dir}/m.json`));
      assert.deepEqual(json.rows.map((x: MatrixRow) => [x.name, x.status]), [
        ["handshake", "pass"],
        ["versionnegotiation", "pass"],
        ["v2", "unsupported"],
      ]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "lab interop exits 1 with the failing row when the server does not answer",
  ignore,
  fn: async () => {
    const port = freeUdpPort();
    const r = await runLab([
      "interop",
      "--server",
      `https://127.0.0.1:${port}`,
      "--cases",
      "versionnegotiation",
    ], 30_000);
    const out = new TextDecoder().decode(r.stdout);
    assert.equal(r.code, 1, out + r.stderr);
    assert.match(out, /^versionnegotiation +fail +no Version Negotiation within 2 s/m);
    // progress: lines (stderr is not a terminal here), then the one error line
    const lines = r.stderr.trim().split("\n");
    assert.equal(lines.at(-1), "error: 1 supported case(s) failed");
    for (const l of lines.slice(0, -1)) assert.match(l, /^progress: /);
  },
});

for (
  const [args, message] of [
    [["--cases", "handshake,warp"], /^error: --cases must be one of .*, got warp$/m],
    [
      ["--server", "ftp://127.0.0.1:1"],
      /^error: --server must be ours, gtlsserver or an https:\/\/ URL, got ftp:\/\/127\.0\.0\.1:1$/m,
    ],
    [["--server", "not a url"], /--server must be ours, gtlsserver or an https:\/\/ URL/],
    [["--client", "--server", "ours"], /^error: --server and --client exclude each other$/m],
    [["--link-backend", "veth"], /^error: --link-backend must be one of relay, netem, got veth$/m],
  ] as const
) {
  Deno.test({
    name: `lab interop ${args.join(" ")} is a usage error: one line, exit 2`,
    fn: async () => {
      const r = await runLab(["interop", ...args]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    },
  });
}
