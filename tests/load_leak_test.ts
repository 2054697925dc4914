/**
 * C-level leak check of the native load engines under valgrind against real
 * servers: the h2 engine against nghttpd over h2c (and a refused port) and
 * over TLS (verified, and with a CA that does not match), the h3 engine
 * against ngtcp2's gtlsserver (verified, and with a CA that does not match).
 * The driver is transports/native/sbl_load_check.c.
 */
import assert from "node:assert/strict";
import { ensureBuilt } from "../lib/native_build.ts";
import { writeDevPki } from "../transports/pki.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import { freePort, needsTool, waitForPort } from "./support.ts";

const noValgrind = needsTool("valgrind", "valgrind");
const VALGRIND = [
  "-q",
  "--leak-check=full",
  "--errors-for-leak-kinds=definite,indirect,possible",
  "--error-exitcode=1",
];

async function check(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const driver = await ensureBuilt("load_check", { quiet: true });
  const out = await new Deno.Command("valgrind", {
    args: [...VALGRIND, driver, ...args],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

function assertClean(r: { code: number; stderr: string }) {
  assert.equal(r.code, 0, r.stderr.slice(0, 4000));
  assert.doesNotMatch(
    r.stderr,
    /definitely lost|indirectly lost|Invalid (read|write)|uninitialised/,
  );
}

Deno.test({
  name: "h2 load engine frees everything after a run against nghttpd and a refused port (valgrind)",
  ignore: noValgrind || needsTool("nghttpd", "nghttp2-server"),
  fn: async () => {
    const docs = await Deno.makeTempDir();
    await Deno.writeFile(`${docs}/f`, new Uint8Array(256).fill(0x61));
    const port = freePort();
    const server = new Deno.Command("nghttpd", {
      args: ["--no-tls", "-d", docs, String(port)],
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      await waitForPort(port);
      const ok = await check(["h2", "127.0.0.1", String(port), "/f", "300", "2", "8"]);
      assertClean(ok);
      assert.match(ok.stdout, /^sent 300 completed 300 errors 0 status200 300 partial 0/);
      const refused = await check(["h2", "127.0.0.1", String(freePort()), "/f", "5", "2", "1"]);
      assertClean(refused);
      assert.match(
        refused.stdout,
        /^sent 0 completed 0 errors 0 status200 0 partial 1 error .*refused/,
      );
    } finally {
      server.kill("SIGTERM");
      await server.status;
      await Deno.remove(docs, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "h2 load engine over TLS frees everything after a run against nghttpd and a TLS failure (valgrind)",
  ignore: noValgrind || needsTool("nghttpd", "nghttp2-server"),
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const other = await Deno.makeTempDir();
    await writeDevPki(dir);
    await writeDevPki(other);
    await Deno.writeFile(`${dir}/f`, new Uint8Array(256).fill(0x61));
    const port = freePort();
    const server = new Deno.Command("nghttpd", {
      args: ["-d", dir, String(port), `${dir}/server-key.pem`, `${dir}/server.pem`],
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      await waitForPort(port);
      const args = ["h2tls", "127.0.0.1", String(port), "/f", "300", "2", "8"];
      const ok = await check([...args, `${dir}/ca.pem`]);
      assertClean(ok);
      assert.match(ok.stdout, /^sent 300 completed 300 errors 0 status200 300 partial 0/);
      const untrusted = await check([...args, `${other}/ca.pem`]);
      assertClean(untrusted);
      assert.match(
        untrusted.stdout,
        /^sent 0 completed 0 errors 0 status200 0 partial 1 error .*TLS/,
      );
    } finally {
      server.kill("SIGTERM");
      await server.status;
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(other, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "h3 load engine frees everything after a run against gtlsserver and a TLS failure (valgrind)",
  ignore: noValgrind || H3_SKIP !== null || needsTool("gtlsserver", "ngtcp2-server"),
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const other = await Deno.makeTempDir();
    await writeDevPki(dir);
    await writeDevPki(other);
    await Deno.writeFile(`${dir}/f`, new Uint8Array(256).fill(0x61));
    const port = freePort();
    const server = new Deno.Command("gtlsserver", {
      args: [
        "-q",
        "-d",
        dir,
        "127.0.0.1",
        String(port),
        `${dir}/server-key.pem`,
        `${dir}/server.pem`,
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      // gtlsserver says nothing when it listens: one request, retried a bounded number of times
      const driver = await ensureBuilt("load_check", { quiet: true });
      let up = false;
      for (let i = 0; i < 50 && !up; i++) {
        const out = await new Deno.Command(driver, {
          args: ["h3", "127.0.0.1", String(port), "/f", "1", "1", "1", `${dir}/ca.pem`],
          stdout: "piped",
          stderr: "null",
        }).output();
        up = /completed 1 /.test(new TextDecoder().decode(out.stdout));
      }
      assert.ok(up, "gtlsserver answered");
      const args = ["h3", "127.0.0.1", String(port), "/f", "300", "2", "8"];
      const ok = await check([...args, `${dir}/ca.pem`]);
      assertClean(ok);
      assert.match(ok.stdout, /^sent 300 completed 300 errors 0 status200 300 partial 0/);
      const untrusted = await check([...args, `${other}/ca.pem`]);
      assertClean(untrusted);
      assert.match(untrusted.stdout, /^sent 0 completed 0 errors 0 status200 0 partial 1 error /);
    } finally {
      server.kill("SIGTERM");
      await server.status;
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(other, { recursive: true });
    }
  },
});
