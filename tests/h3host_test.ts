/**
 * The peers scenario's C host of the h3 module (bench/native/h3host.c): it
 * answers what the native h3 engine sends with the size it was given, frees
 * everything on SIGTERM (valgrind) and refuses bad arguments with one line.
 */
import assert from "node:assert/strict";
import { ensureBuilt } from "../lib/native_build.ts";
import { DEV_PKI_FILES, writeDevPki } from "../transports/pki.ts";
import { H3_SKIP, haveProgram } from "../transports/h3/_test_util.ts";
import { freeUdpPort } from "../lib/host.ts";
import { runLoad } from "../load/mod.ts";

const haveValgrind = await haveProgram("valgrind");
if (!H3_SKIP && !haveValgrind) {
  console.log("skipping the h3 host's leak check: apt-get install -y valgrind");
}

/** Reads the child's stdout until its first line, within `ms`. */
async function firstLine(child: Deno.ChildProcess, ms: number): Promise<string> {
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const deadline = Date.now() + ms;
  try {
    while (!text.includes("\n") && Date.now() < deadline) {
      const timer = new Promise<null>((r) => setTimeout(() => r(null), deadline - Date.now()));
      const next = await Promise.race([reader.read(), timer]);
      if (next === null || next.done) break;
      text += next.value;
    }
  } finally {
    reader.releaseLock();
  }
  return text.split("\n")[0];
}

Deno.test({
  name:
    "the h3 module's C host answers 300 requests on 8 streams with the given size and frees everything on SIGTERM (valgrind)",
  ignore: H3_SKIP !== null || !haveValgrind,
  fn: async () => {
    const exe = await ensureBuilt("h3host", { quiet: true });
    const dir = await Deno.makeTempDir();
    const port = freeUdpPort();
    const child = new Deno.Command("valgrind", {
      args: [
        "-q",
        "--leak-check=full",
        "--errors-for-leak-kinds=definite,indirect",
        "--error-exitcode=3",
        exe,
        `${dir}/${DEV_PKI_FILES.serverCert}`,
        `${dir}/${DEV_PKI_FILES.serverKey}`,
        String(port),
        "777",
      ],
      stdout: "piped",
      stderr: "piped",
    });
    await writeDevPki(dir);
    const proc = child.spawn();
    const stderr = new Response(proc.stderr).text();
    try {
      assert.equal(await firstLine(proc, 60_000), `listening on 127.0.0.1:${port}`);
      const r = await runLoad({
        protocol: "h3",
        host: "127.0.0.1",
        port,
        insecure: true,
        headers: [
          [":method", "GET"],
          [":scheme", "https"],
          [":authority", `127.0.0.1:${port}`],
          [":path", "/anything"],
        ],
        connections: 1,
        streams: 8,
        requests: 300,
        timeoutMs: 20_000,
      });
      assert.equal(r.completed, 300, r.error);
      assert.equal(r.errors, 0);
      assert.deepEqual(r.status, { "200": 300 });
      assert.equal(r.bodyBytesIn, 300 * 777);
    } finally {
      proc.kill("SIGTERM");
      const status = await proc.status;
      const text = await stderr;
      await Deno.remove(dir, { recursive: true });
      assert.equal(status.code, 0, text.slice(0, 4000));
      assert.doesNotMatch(text, /definitely lost|indirectly lost|Invalid (read|write)/);
    }
  },
});

Deno.test({
  name: "the h3 module's C host refuses bad arguments and an unreadable key with one line",
  ignore: H3_SKIP !== null,
  fn: async () => {
    const exe = await ensureBuilt("h3host", { quiet: true });
    const cases: [string[], number, RegExp][] = [
      [[], 2, /^usage: sbilab_h3host CERT\.pem KEY\.pem PORT SIZE$/],
      [["a.pem", "b.pem", "0", "10"], 2, /^sbilab_h3host: bad port or size$/],
      [["a.pem", "b.pem", "4433", "99999999999"], 2, /^sbilab_h3host: bad port or size$/],
      [
        ["/nonexistent/c.pem", "/nonexistent/k.pem", "4433", "10"],
        1,
        /cannot read the certificate or key$/,
      ],
    ];
    for (const [args, code, line] of cases) {
      const out = await new Deno.Command(exe, { args, stdout: "null", stderr: "piped" }).output();
      const text = new TextDecoder().decode(out.stderr).trim();
      assert.equal(out.code, code, `${args.join(" ")}: ${text}`);
      assert.equal(text.split("\n").length, 1, text);
      assert.match(text, line);
    }
  },
});
