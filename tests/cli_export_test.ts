/**
 * The keying-material exporter from the command line: `lab request --export`
 * prints the same bytes as `lab serve --export` logs for that connection, on
 * h2 over TLS and on h3, and `openssl s_client -keymatexport` agrees with our
 * h2-TLS server.
 */
import assert from "node:assert/strict";
import { h3Available } from "../transports/h3/mod.ts";
import { N32_MASTER_LABEL } from "../transports/n32.ts";
import { needsTool, runLab, runTool, startLabServe } from "./support.ts";

const SPEC = `${N32_MASTER_LABEL}:64`;
const withH3 = await h3Available();

/** The exporter hex on a `LABEL:LEN hex` line. */
function hexOn(line: string): string {
  const m = line.match(new RegExp(`${SPEC} ([0-9a-f]{128})$`));
  assert.ok(m, `no exporter output in: ${line}`);
  return m[1];
}

Deno.test("lab request --export prints the N32 master key the server logs, on h2-tls and h3", async () => {
  const transports: ("h2-tls" | "h3")[] = withH3 ? ["h2-tls", "h3"] : ["h2-tls"];
  const srv = await startLabServe({ transports, extraArgs: ["--export", SPEC] });
  const state = srv.stateDir;
  try {
    for (const t of transports) {
      const url = `${srv.urls[t]}/nbench/v1/payload?size=16`;
      const args = ["request", "--ca", `${state}/ca.pem`, "--export", SPEC, url];
      const r = await runLab(t === "h3" ? ["request", "--h3", ...args.slice(1)] : args);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.length, 16, "the body is on stdout, untouched");
      const client = hexOn(r.stderr.trim());
      const logged = await srv.stderrLine(
        new RegExp(`^${t} TLS from 127\\.0\\.0\\.1:\\d+ .*${client}$`),
      );
      assert.equal(hexOn(logged), client);
      assert.match(logged, /TLS1\.3, TLS_AES_128_GCM_SHA256/);
    }
  } finally {
    await srv.stop();
  }
});

Deno.test({
  name: "openssl s_client -keymatexport prints the N32 master key our h2-TLS server logs",
  ignore: needsTool("openssl", "openssl"),
  fn: async () => {
    const srv = await startLabServe({ transports: ["h2-tls"], extraArgs: ["--export", SPEC] });
    const state = srv.stateDir;
    try {
      const url = new URL(srv.urls["h2-tls"]!);
      const r = await runTool("sh", [
        "-c",
        `echo | openssl s_client -connect 127.0.0.1:${url.port} -alpn h2 -CAfile ${state}/ca.pem ` +
        `-verify_return_error -keymatexport ${N32_MASTER_LABEL} -keymatexportlen 64`,
      ]);
      const out = new TextDecoder().decode(r.stdout);
      const m = out.match(/Keying material: ([0-9A-F]{128})/);
      assert.ok(m, `openssl printed no keying material:\n${out}\n${r.stderr}`);
      const logged = await srv.stderrLine(/^h2-tls TLS from /);
      assert.equal(hexOn(logged), m[1].toLowerCase());
    } finally {
      await srv.stop();
    }
  },
});

Deno.test("lab request and lab serve refuse a malformed --export with one line and exit 2", async () => {
  for (const bad of ["EXPORTER_X", "EXPORTER_X:0", ":64", "EXPORTER_X:70000", "EXPORTER_X:abc"]) {
    const r = await runLab(["request", "--export", bad, "https://127.0.0.1:1/x"]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--export must be LABEL:LEN/);
  }
  const plain = await runLab(["request", "--export", SPEC, "http://127.0.0.1:1/x"]);
  assert.equal(plain.code, 2);
  assert.match(plain.stderr, /--export needs TLS/);
  const serve = await runLab(["serve", "--transports", "h2-tls", "--export", "nope"]);
  assert.equal(serve.code, 2);
  assert.match(serve.stderr, /--export must be LABEL:LEN/);
});
