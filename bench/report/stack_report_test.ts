import assert from "node:assert/strict";
import { runBench } from "../run/run_bench.ts";
import { describeConnection, stackLines } from "./stack_report.ts";
import { renderTable } from "./table.ts";
import { renderCsv } from "./csv.ts";
import { renderMarkdown } from "./markdown.ts";

Deno.test("a connection is described with its libraries, TLS suite and group, and packet sizes", () => {
  const text = describeConnection({
    stack: "native",
    implementation: "ngtcp2 0.12.1, nghttp3 0.8.0",
    tls: {
      library: "GnuTLS 3.7.9",
      version: "TLS1.3",
      suite: "TLS_AES_128_GCM_SHA256",
      group: "X25519",
    },
    maxDatagramBytes: 1452,
  });
  assert.equal(
    text,
    "ngtcp2 0.12.1, nghttp3 0.8.0 · GnuTLS 3.7.9 TLS1.3 TLS_AES_128_GCM_SHA256 X25519 · largest QUIC datagram 1452 B",
  );
  assert.match(
    describeConnection({ stack: "deno", implementation: "fetch", tls: { library: "rustls" } }),
    /rustls \(suite and group not exposed\)/,
  );
});

Deno.test("a deno-stack run names its stack in the config, every row id, the table, CSV and Markdown", async () => {
  const run = await runBench({
    stack: "deno",
    inProcess: true,
    transports: ["h2c"],
    sizes: [256],
    warmupMs: 20,
    samples: 5,
    skipFloors: true,
  });
  assert.equal(run.config.stack, "deno");
  assert.equal(run.rows.length, 1);
  assert.equal(run.rows[0].stack, "deno");
  assert.equal(run.rows[0].id, "deno/rtt/h2c/256");
  assert.equal(stackLines(run)[0], "stack deno");
  assert.match(renderTable(run), /^stack deno$/m);
  assert.match(renderCsv(run).split("\n")[1], /^deno\/rtt\/h2c\/256,rtt,deno,h2c,/);
  assert.match(renderMarkdown(run), /\| h2c \| deno \|/);
  assert.ok(run.notes.some((n) => n.startsWith("Stack deno:")), run.notes.join(" | "));
});

Deno.test("a deno-stack h3 row runs on quinn with nghttp3 framing and says so", async () => {
  const run = await runBench({
    stack: "deno",
    inProcess: true,
    transports: ["h3"],
    sizes: [256],
    warmupMs: 20,
    samples: 5,
    skipFloors: true,
  });
  assert.equal(run.rows.length, 1);
  assert.equal(run.rows[0].id, "deno/rtt/h3/256");
  assert.ok(run.rows[0].estimate.median > 0);
  assert.match(stackLines(run).join("\n"), /h3: quinn \(Deno [\d.]+\), nghttp3 0\.8/);
});

Deno.test("the HTML footer names the sizes the rows measured, not every size the config lists", async () => {
  const { measuredSizes, renderHtml } = await import("./html.ts");
  const measured = await runBench({
    inProcess: true,
    transports: ["h2c"],
    skipFloors: true,
    samples: 2,
    sizes: [256],
  });
  const run = { ...measured, config: { ...measured.config, sizes: [256, 16384] } };
  assert.deepEqual(measuredSizes(run), [256]);
  const html = renderHtml(run, { name: "none", version: "0", source: "" });
  assert.match(html, /Sizes: 256 B;/);
});

Deno.test("a deno-stack rtt run measures a bare runtime arm per transport and size, and each row's multiple of it", async () => {
  const run = await runBench({
    stack: "deno",
    inProcess: true,
    transports: ["h2c", "h2-tls", "h3"],
    sizes: [256],
    warmupMs: 20,
    samples: 6,
    rounds: 2,
  });
  const bare = run.floors.rows.filter((f) => f.source === "bare");
  assert.deepEqual(
    bare.map((f) => [f.transport, f.protocol, f.sizeBytes]),
    [["h2c", "tcp", 256], ["h2-tls", "tcp", 256], ["h3", "udp", 256]],
  );
  for (const f of bare) assert.equal(f.rounds?.counts.length, 2);
  const runtime = (run.rounds?.ratios ?? []).filter((r) => r.kind === "runtime");
  assert.deepEqual(runtime.map((r) => [r.numerator, r.denominator]), [
    ["deno/rtt/h2c/256", "floor/bare/h2c/256"],
    ["deno/rtt/h2-tls/256", "floor/bare/h2-tls/256"],
    ["deno/rtt/h3/256", "floor/bare/h3/256"],
  ]);
  for (const r of runtime) {
    const row = run.rows.find((x) => x.id === r.numerator)!;
    const f = bare.find((x) => `floor/bare/${x.transport}/${x.sizeBytes}` === r.denominator)!;
    assert.ok(r.perRound.length === 2 && r.perRound.every((x) => x > 0), String(r.perRound));
    assert.ok(row.estimate.median > 0 && f.estimate.median > 0);
  }
  assert.match(renderTable(run), /^bare h2-tls\s/m);
  assert.match(renderTable(run), /h3 ÷ bare runtime/);
  assert.match(
    renderMarkdown(run),
    /h3 at 256 B takes [\d.]+× \[[\d.]+ – [\d.]+\] its bare runtime/,
  );
});

Deno.test("a native-stack rtt run has no bare runtime arms", async () => {
  const run = await runBench({
    inProcess: true,
    transports: ["h2c"],
    sizes: [256],
    warmupMs: 20,
    samples: 4,
    rounds: 2,
  });
  assert.ok(run.floors.rows.some((f) => f.source === "kernel"));
  assert.equal(run.floors.rows.filter((f) => f.source === "bare").length, 0);
  assert.equal((run.rounds?.ratios ?? []).filter((r) => r.kind === "runtime").length, 0);
});
