/**
 * The concurrency scenario against a server whose stream limit is below the
 * plan: the row's figures carry the limit and a note says what was really
 * in flight.
 */
import assert from "node:assert/strict";
import { freePort, needsTool, runLab, waitForPort } from "./support.ts";

Deno.test({
  name: "a concurrency row against a server allowing 4 streams says it had 4 in flight, not 32",
  ignore: needsTool("nghttpd", "nghttp2-server"),
  fn: async () => {
    const port = freePort();
    const dir = await Deno.makeTempDir();
    await Deno.writeTextFile(`${dir}/nf.json`, "{}");
    const server = new Deno.Command("nghttpd", {
      args: ["--no-tls", "-m", "4", "-d", dir, String(port)],
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      await waitForPort(port);
      const r = await runLab([
        "bench",
        "-q",
        "--scenario",
        "concurrency",
        "--target",
        `http://127.0.0.1:${port}`,
        "--path",
        "/nf.json",
        "--concurrency",
        "32",
        "--warm-up",
        "100ms",
        "--time",
        "300ms",
        "--no-charts",
        "--json",
        `${dir}/run.json`,
      ]);
      assert.equal(r.code, 0, r.stderr);
      const out = new TextDecoder().decode(r.stdout);
      assert.match(
        out,
        /concurrency h2c 32 in flight: the server allowed 4 streams at once \(SETTINGS_MAX_CONCURRENT_STREAMS 4\)/,
      );
      const run = JSON.parse(await Deno.readTextFile(`${dir}/run.json`));
      const row = run.rows.find((x: { concurrency?: number }) => x.concurrency === 32);
      assert.equal(row.extra.peerStreamLimit, 4);
      assert.ok(row.extra.inFlightLittle > 0);
    } finally {
      server.kill();
      await server.status;
      await Deno.remove(dir, { recursive: true });
    }
  },
});
