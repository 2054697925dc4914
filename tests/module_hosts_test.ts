/**
 * The peers scenario's C hosts of the modules (bench/native/h2host.c for the
 * h2 server, h2c or over TLS, h3host.c for h3): each answers what the native engine sends with
 * the size it was given, keeps serving after a connection sends garbage,
 * frees everything on SIGTERM (valgrind) and refuses bad arguments with one
 * line.
 */
import assert from "node:assert/strict";
import { ensureBuilt } from "../lib/native_build.ts";
import { DEV_PKI_FILES, writeDevPki } from "../transports/pki.ts";
import { H3_SKIP } from "../transports/h3/_test_util.ts";
import { needsTool } from "./support.ts";
import { freePort, freeUdpPort } from "../lib/host.ts";
import { type LoadPlan, runLoad } from "../load/mod.ts";

const haveValgrind = !needsTool("valgrind", "valgrind");

/** Reads the child's stdout until its first line, within `ms`. */
async function firstLine(child: Deno.ChildProcess, ms: number): Promise<string> {
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const deadline = Date.now() + ms;
  try {
    while (!text.includes("\n") && Date.now() < deadline) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<null>((r) =>
        timer = setTimeout(() => r(null), deadline - Date.now())
      );
      const next = await Promise.race([reader.read(), late]).finally(() => clearTimeout(timer));
      if (next === null || next.done) break;
      text += next.value;
    }
  } finally {
    reader.releaseLock();
  }
  return text.split("\n")[0];
}

/**
 * Runs `exe args` under valgrind, waits for its "listening" line, runs
 * `body`, then stops it with SIGTERM: it must exit 0 with nothing lost.
 */
async function underValgrind(
  exe: string,
  args: string[],
  port: number,
  body: () => Promise<void>,
): Promise<void> {
  const proc = new Deno.Command("valgrind", {
    args: [
      "-q",
      "--leak-check=full",
      "--errors-for-leak-kinds=definite,indirect",
      "--error-exitcode=3",
      exe,
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(proc.stderr).text();
  let failure: unknown;
  try {
    assert.equal(await firstLine(proc, 60_000), `listening on 127.0.0.1:${port}`);
    await body();
  } catch (err) {
    failure = err;
  }
  proc.kill("SIGTERM");
  const status = await proc.status;
  const text = await stderr;
  if (failure) throw failure;
  assert.equal(status.code, 0, text.slice(0, 4000));
  assert.doesNotMatch(text, /definitely lost|indirectly lost|Invalid (read|write)/);
}

/** A GET of `/anything` with the shape the hosts are measured with (h2 over TLS when `tls`). */
function plan(protocol: "h2" | "h3", port: number, connections: number, tls = false): LoadPlan {
  return {
    protocol,
    host: "127.0.0.1",
    port,
    ...(tls ? { tls: true } : {}),
    insecure: protocol === "h3" || tls ? true : undefined,
    headers: [
      [":method", "GET"],
      [":scheme", protocol === "h3" || tls ? "https" : "http"],
      [":authority", `127.0.0.1:${port}`],
      [":path", "/anything"],
    ],
    connections,
    streams: 8,
    requests: 300,
    timeoutMs: 20_000,
  };
}

async function assertAnswers(p: LoadPlan, requests: number, size: number): Promise<void> {
  const r = await runLoad({ ...p, requests });
  assert.equal(r.completed, requests, r.error);
  assert.equal(r.errors, 0);
  assert.deepEqual(r.status, { "200": requests });
  assert.equal(r.bodyBytesIn, requests * size);
}

Deno.test({
  name:
    "the h2 server module's C host answers 300 requests on 2 connections × 8 streams with the given size, drops a connection that sends garbage, keeps serving and frees everything on SIGTERM (valgrind)",
  ignore: !haveValgrind,
  fn: async () => {
    const exe = await ensureBuilt("h2host", { quiet: true });
    const port = freePort();
    await underValgrind(exe, [String(port), "777"], port, async () => {
      await assertAnswers(plan("h2", port, 2), 300, 777);
      const junk = await Deno.connect({ hostname: "127.0.0.1", port });
      await junk.write(new TextEncoder().encode("GET / HTTP/1.1\r\n\r\n".repeat(8)));
      const buf = new Uint8Array(4096);
      const deadline = Date.now() + 10_000;
      let closed = false;
      while (!closed && Date.now() < deadline) closed = (await junk.read(buf)) === null;
      junk.close();
      assert.ok(closed, "the host kept a connection that sent no preface");
      await assertAnswers(plan("h2", port, 1), 10, 777);
    });
  },
});

Deno.test({
  name:
    "the h2 server module's C host with a certificate speaks h2 over TLS: 300 requests on 2 connections × 8 streams, a cleartext client is dropped, everything freed on SIGTERM (valgrind)",
  ignore: !haveValgrind,
  fn: async () => {
    const exe = await ensureBuilt("h2host", { quiet: true });
    const dir = await Deno.makeTempDir();
    const port = freePort();
    try {
      await writeDevPki(dir);
      const args = [
        String(port),
        "777",
        `${dir}/${DEV_PKI_FILES.serverCert}`,
        `${dir}/${DEV_PKI_FILES.serverKey}`,
      ];
      await underValgrind(exe, args, port, async () => {
        await assertAnswers(plan("h2", port, 2, true), 300, 777);
        // h2c prior knowledge against the TLS host: no TLS record, so the host drops it.
        const r = await runLoad({ ...plan("h2", port, 1), requests: 1, timeoutMs: 5000 });
        assert.equal(r.completed, 0);
        await assertAnswers(plan("h2", port, 1, true), 10, 777);
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "the h3 module's C host answers 300 requests on 8 streams with the given size and frees everything on SIGTERM (valgrind)",
  ignore: H3_SKIP !== null || !haveValgrind,
  fn: async () => {
    const exe = await ensureBuilt("h3host", { quiet: true });
    const dir = await Deno.makeTempDir();
    const port = freeUdpPort();
    try {
      await writeDevPki(dir);
      const args = [
        `${dir}/${DEV_PKI_FILES.serverCert}`,
        `${dir}/${DEV_PKI_FILES.serverKey}`,
        String(port),
        "777",
      ];
      await underValgrind(exe, args, port, () => assertAnswers(plan("h3", port, 1), 300, 777));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "the module hosts refuse bad arguments and an unreadable key with one line",
  ignore: H3_SKIP !== null,
  fn: async () => {
    const h2 = await ensureBuilt("h2host", { quiet: true });
    const h3 = await ensureBuilt("h3host", { quiet: true });
    const cases: [string, string[], number, RegExp][] = [
      [h2, [], 2, /^usage: sbilab_h2host PORT SIZE \[CERT\.pem KEY\.pem\]$/],
      [h2, ["4433", "10", "a.pem"], 2, /^usage: sbilab_h2host PORT SIZE/],
      [
        h2,
        ["4433", "10", "/nonexistent/c.pem", "/nonexistent/k.pem"],
        1,
        /^sbilab_h2host: cannot read the certificate or key$/,
      ],
      [h2, ["0", "10"], 2, /^sbilab_h2host: bad port or size$/],
      [h2, ["4433", "-1"], 2, /^sbilab_h2host: bad port or size$/],
      [h3, [], 2, /^usage: sbilab_h3host CERT\.pem KEY\.pem PORT SIZE$/],
      [h3, ["a.pem", "b.pem", "0", "10"], 2, /^sbilab_h3host: bad port or size$/],
      [h3, ["a.pem", "b.pem", "4433", "99999999999"], 2, /^sbilab_h3host: bad port or size$/],
      [
        h3,
        ["/nonexistent/c.pem", "/nonexistent/k.pem", "4433", "10"],
        1,
        /cannot read the certificate or key$/,
      ],
    ];
    for (const [exe, args, code, line] of cases) {
      const out = await new Deno.Command(exe, { args, stdout: "null", stderr: "piped" }).output();
      const text = new TextDecoder().decode(out.stderr).trim();
      assert.equal(out.code, code, `${args.join(" ")}: ${text}`);
      assert.equal(text.split("\n").length, 1, text);
      assert.match(text, line);
    }
  },
});
