/**
 * `lab request` with curl's habits, tested by spawning it: `-v` shows the
 * headers the client really sent (the SBI ones included) on every client,
 * `-o`, `-f`, `-s`, `-d` against `--data-binary`, and curl's exit statuses
 * for the same failures.
 */
import assert from "node:assert/strict";
import { h3Available } from "../transports/h3/mod.ts";
import { freePort, freeUdpPort, runLab, startLabServe } from "./support.ts";

const dec = new TextDecoder();
const HAVE_H3 = await h3Available();
const PAYLOAD = "/nbench/v1/payload?size=64";

async function withServe(
  fn: (urls: Record<string, string>, state: string) => Promise<void>,
  transports: ("h2c" | "h2-tls" | "h3")[] = ["h2c", "h2-tls", "h3"],
): Promise<void> {
  const state = await Deno.makeTempDir();
  const srv = await startLabServe({ transports, stateDir: state });
  try {
    await fn(srv.urls as Record<string, string>, state);
  } finally {
    await srv.stop();
    await Deno.remove(state, { recursive: true });
  }
}

function sentHeader(stderr: string, name: string): string | undefined {
  const m = new RegExp(`^> ${name}: (.*)$`, "m").exec(stderr);
  return m?.[1];
}

Deno.test({
  name: "lab request -v shows the SBI headers each client sent, the response headers and TLS",
  ignore: !HAVE_H3,
  fn: () =>
    withServe(async (urls, state) => {
      const cases: [string, string[], string][] = [
        ["native h2c", [], urls["h2c"]],
        ["deno h2c", ["--stack", "deno"], urls["h2c"]],
        ["native h2-tls", ["--ca", `${state}/ca.pem`], urls["h2-tls"]],
        ["native h3", ["--h3", "--ca", `${state}/ca.pem`], urls["h3"]],
        ["deno h3", ["--stack", "deno", "--h3", "--ca", `${state}/ca.pem`], urls["h3"]],
      ];
      for (const [name, extra, origin] of cases) {
        const r = await runLab([
          "request",
          "-v",
          "--timeout",
          "2s",
          "-H",
          "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
          ...extra,
          `${origin}${PAYLOAD}`,
        ]);
        assert.equal(r.code, 0, `${name}: ${r.stderr}`);
        assert.equal(r.stdout.length, 64, `${name}: the body alone goes to stdout`);
        const err = r.stderr;
        const version = extra.includes("--h3") ? "HTTP/3" : "HTTP/2";
        assert.match(
          err,
          new RegExp(`^> GET ${PAYLOAD.replace("?", "\\?")} ${version}$`, "m"),
          name,
        );
        assert.match(
          sentHeader(err, "traceparent") ?? "",
          /^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/,
          `${name}: the caller's trace id is kept with a new span id`,
        );
        assert.notEqual(
          sentHeader(err, "traceparent"),
          "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        );
        assert.equal(sentHeader(err, "3gpp-sbi-max-rsp-time"), "2000", name);
        assert.match(sentHeader(err, "3gpp-sbi-sender-timestamp") ?? "", / GMT$/, name);
        assert.equal(sentHeader(err, "user-agent"), "SMF-sbilab/0.1", name);
        assert.match(err, new RegExp(`^< ${version} 200$`, "m"), name);
        assert.match(err, /^< content-length: 64$/m, name);
        if (name === "native h2-tls" || name === "native h3") {
          assert.match(err, /^\* TLS: TLS1\.3 \/ TLS_\w+ \/ \w+ \(GnuTLS/m, name);
        }
      }
    }),
});

Deno.test("lab request -o writes the body to a file, -f exits 22 on a 404 with no body and -s keeps quiet", () =>
  withServe(async (urls) => {
    const dir = await Deno.makeTempDir();
    try {
      const o = await runLab(["request", "-o", `${dir}/body.bin`, `${urls["h2c"]}${PAYLOAD}`]);
      assert.equal(o.code, 0, o.stderr);
      assert.equal(o.stdout.length, 0);
      assert.equal((await Deno.readFile(`${dir}/body.bin`)).length, 64);
      const missing = `${urls["h2c"]}/nothing/here`;
      const plain = await runLab(["request", missing]);
      assert.equal(plain.code, 0, "without -f a 404 is a response like any other");
      assert.match(dec.decode(plain.stdout), /"status":\s*404/);
      const f = await runLab(["request", "-f", missing]);
      assert.equal(f.code, 22);
      assert.equal(f.stdout.length, 0);
      assert.match(f.stderr, /^error: The requested URL returned error: 404$/m);
      const sf = await runLab(["request", "-sf", missing]);
      assert.equal(sf.code, 22);
      assert.equal(sf.stderr, "");
      const sSf = await runLab(["request", "-sSf", missing]);
      assert.equal(sSf.code, 22);
      assert.match(sSf.stderr, /404/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }, ["h2c"]));

Deno.test("lab request -d @FILE drops CR and LF as curl does while --data-binary keeps every byte", () =>
  withServe(async (urls) => {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/body.json`, '{"a":\r\n 1}\n');
      const url = `${urls["h2c"]}/nbench/v1/echo`;
      const d = await runLab(["request", "-d", `@${dir}/body.json`, url]);
      assert.equal(d.code, 0, d.stderr);
      assert.equal(dec.decode(d.stdout), '{"a": 1}');
      const bin = await runLab(["request", "--data-binary", `@${dir}/body.json`, url]);
      assert.equal(bin.code, 0, bin.stderr);
      assert.equal(dec.decode(bin.stdout), '{"a":\r\n 1}\n');
      const both = await runLab(["request", "-d", "x", "--data-binary", "y", url]);
      assert.equal(both.code, 2);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }, ["h2c"]));

Deno.test({
  name: "lab request exits as curl does: 60 for an untrusted certificate on h2-tls and h3",
  ignore: !HAVE_H3,
  fn: () =>
    withServe(async (urls) => {
      for (const args of [[`${urls["h2-tls"]}${PAYLOAD}`], ["--h3", `${urls["h3"]}${PAYLOAD}`]]) {
        const r = await runLab(["request", ...args]);
        assert.equal(r.code, 60, r.stderr);
        assert.match(r.stderr, /trusted|issuer/i);
      }
    }, ["h2-tls", "h3"]),
});

Deno.test("lab request exits as curl does: 7 refused, 6 unresolved, 35 TLS to a cleartext port", async () => {
  const refused = await runLab(["request", `http://127.0.0.1:${freePort()}/x`]);
  assert.equal(refused.code, 7, refused.stderr);
  if (HAVE_H3) {
    const h3 = await runLab(["request", "--h3", `https://127.0.0.1:${freeUdpPort()}/x`]);
    assert.equal(h3.code, 7, h3.stderr);
  }
  const unresolved = await runLab(["request", "http://no-such-host.invalid/x"]);
  assert.equal(unresolved.code, 6, unresolved.stderr);
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  // a peer that answers a ClientHello with bytes that are not TLS
  const served = (async () => {
    const conn = await l.accept();
    await conn.write(new TextEncoder().encode("HTTP/1.1 400 Bad Request\r\n\r\n"));
    conn.close();
  })();
  try {
    const tls = await runLab(["request", "-k", `https://127.0.0.1:${port}/x`]);
    assert.equal(tls.code, 35, tls.stderr);
  } finally {
    await served;
    l.close();
  }
});

Deno.test("lab request exits 28 when a silent server lets --timeout or --max-time run out", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  const conns: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const c of l) conns.push(c);
  })();
  try {
    const t = await runLab(["request", "--timeout", "300ms", `http://127.0.0.1:${port}/x`]);
    assert.equal(t.code, 28, t.stderr);
    assert.match(t.stderr, /timed out/i);
    const m = await runLab(["request", "--max-time", "0.3", `http://127.0.0.1:${port}/x`]);
    assert.equal(m.code, 28, m.stderr);
  } finally {
    l.close();
    await accepting.catch(() => {});
    for (const c of conns) c.close();
  }
});

Deno.test("lab request --help names curl's exit statuses and the duration syntax", async () => {
  const r = await runLab(["request", "--help"]);
  assert.equal(r.code, 0);
  const help = dec.decode(r.stdout);
  for (const code of ["6", "7", "22", "28", "35", "60"]) {
    assert.match(help, new RegExp(`^  ${code} +\\S`, "m"), `exit status ${code}`);
  }
  assert.match(help, /500ms/);
});
