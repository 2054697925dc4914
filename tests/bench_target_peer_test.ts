/**
 * `lab bench --target` against an HTTP/2 server that is not sbilab's (nghttpd
 * serving a file): with `--path`, every scenario that takes a request (rtt,
 * concurrency, rate, capacity, cold) measures the file's GET and keeps its
 * status counts; a path the server does not have gives rows whose responses
 * all failed, and the run exits 22.
 */
import assert from "node:assert/strict";
import { freePort, needsTool, runLab, waitForPort } from "./support.ts";

interface SavedRow {
  transport: string;
  label: string;
  engine?: string;
  errors: number;
  status?: Record<string, number>;
  failed?: number;
}

const QUICK = ["-q", "--quick", "--no-charts", "--concurrency", "2"];

Deno.test({
  name:
    "lab bench --target nghttpd --path runs rtt, concurrency, rate, capacity and cold on the file's GET, with status counts in every row",
  ignore: needsTool("nghttpd", "nghttp2-server"),
  fn: async () => {
    const port = freePort();
    const dir = await Deno.makeTempDir({ prefix: "sbilab-nghttpd-" });
    const body = JSON.stringify({ nfInstances: [{ nfType: "SMF" }] });
    await Deno.writeTextFile(`${dir}/nf-instances.json`, body);
    const server = new Deno.Command("nghttpd", {
      args: ["--no-tls", "-d", dir, String(port)],
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      await waitForPort(port);
      const target = `http://127.0.0.1:${port}`;
      for (const scenario of ["rtt", "concurrency", "rate", "capacity", "cold"]) {
        const json = `${dir}/${scenario}.json`;
        const r = await runLab([
          "bench",
          "--target",
          target,
          "--path",
          "/nf-instances.json",
          "--scenario",
          scenario,
          ...QUICK,
          "--json",
          json,
        ], 60_000);
        const out = new TextDecoder().decode(r.stdout);
        assert.equal(r.code, 0, `${scenario}: ${out}\n${r.stderr}`);
        const run = JSON.parse(await Deno.readTextFile(json));
        assert.deepEqual(run.config.request, { method: "GET", path: "/nf-instances.json" });
        const rows: SavedRow[] = run.rows;
        assert.ok(rows.length > 0, `${scenario}: rows`);
        // an http:// target speaks h2c only: no h2-TLS or h3 row
        assert.deepEqual([...new Set(rows.map((x) => x.transport))], ["h2c"], scenario);
        for (const row of rows) assert.match(row.label, /GET \/nf-instances\.json/, scenario);
        const counted = rows.filter((x) => x.status !== undefined);
        assert.ok(counted.length > 0, `${scenario}: status counts`);
        for (const row of counted) {
          assert.deepEqual(Object.keys(row.status!), ["200"], `${scenario}: ${row.label}`);
          assert.ok(row.status!["200"] > 0);
          assert.equal(row.failed, 0);
        }
        const total = counted.reduce((n, x) => n + x.status!["200"], 0);
        assert.match(out, new RegExp(`^requests: ${total} succeeded, 0 failed, 0 errors`, "m"));
      }
      // the payload GET nghttpd does not have: every response failed, the rows say so, exit 22
      for (const scenario of ["rtt", "concurrency", "cold"]) {
        const json = `${dir}/missing-${scenario}.json`;
        const r = await runLab(
          ["bench", "--target", target, "--scenario", scenario, ...QUICK, "--json", json],
          60_000,
        );
        assert.equal(r.code, 22, `${scenario}: ${r.stderr}`);
        assert.match(r.stderr, /^error: \d+ request\(s\) failed in \d+ of \d+ rows \(\d+ × 404;/m);
        const run = JSON.parse(await Deno.readTextFile(json));
        const counted = (run.rows as SavedRow[]).filter((x) => x.status !== undefined);
        assert.ok(counted.length > 0, scenario);
        for (const row of counted) {
          assert.deepEqual(Object.keys(row.status!), ["404"], scenario);
          assert.equal(row.failed, row.status!["404"]);
        }
      }
      // every cold request throws (a 200 of the wrong length for the payload GET): no row, and
      // the run says why and fails instead of ending "No rows were measured." with exit 0
      await Deno.mkdir(`${dir}/nbench/v1`, { recursive: true });
      await Deno.writeTextFile(`${dir}/nbench/v1/payload`, "short");
      const cold = await runLab(["bench", "--target", target, "--scenario", "cold", ...QUICK]);
      assert.equal(cold.code, 1, cold.stderr);
      assert.match(
        cold.stderr,
        /^error: No rows were measured: cold h2c full handshake: no row, 0 request\(s\) timed, \d+ failed \(first: GET \/nbench\/v1\/payload\?size=256 answered 200 with 5 bytes\)\.$/m,
      );
    } finally {
      server.kill();
      await server.status;
      await Deno.remove(dir, { recursive: true });
    }
  },
});
