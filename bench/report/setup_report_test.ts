import assert from "node:assert/strict";
import type { BenchRun, ResultRow } from "../record/schema.ts";
import { roundTrips, setupTable } from "./setup_report.ts";

/** A cold row with only what the set-up table reads. */
function row(transport: string, mode: string, phase: string, medianMs: number): ResultRow {
  return {
    id: `native/cold/${transport}/${mode}/${phase}`,
    scenario: "cold",
    transport,
    floor: transport === "h3" ? "udp" : "tcp",
    sizeBytes: 256,
    estimate: { median: medianMs * 1e6 },
  } as unknown as ResultRow;
}

const rows = [
  row("h2-tls", "full", "connect", 50),
  row("h2-tls", "full", "tls", 100),
  row("h2-tls", "full", "first-byte", 150),
  row("h2-tls", "full", "total", 151),
  row("h3", "0-rtt", "total", 52),
  row("h2c", "full", "total", 101),
  { ...row("h2-tls", "full", "total", 1), scenario: "rtt" } as ResultRow,
];

Deno.test("set-up table divides by the link's RTT across a link", () => {
  const run = {
    rows,
    config: { link: { spec: "wan", rttMs: 50 } },
    floors: { rows: [] },
  } as unknown as BenchRun;
  const t = setupTable(run);
  assert.deepEqual(t.header, ["transport", "start", "connect", "TLS", "first byte", "total"]);
  assert.deepEqual(t.body, [
    [
      "h2-tls",
      "full",
      "50.0 ms (1.00 RTT)",
      "100 ms (2.00 RTT)",
      "150 ms (3.00 RTT)",
      "151 ms (3.02 RTT)",
    ],
    ["h3", "0-rtt", "–", "–", "–", "52.0 ms (1.04 RTT)"],
    ["h2c", "full", "–", "–", "–", "101 ms (2.02 RTT)"],
  ]);
});

Deno.test("set-up table uses the matching floor without a link, and nothing when there is none", () => {
  const floor = (protocol: string, ms: number) => ({
    source: "kernel",
    protocol,
    sizeBytes: 256,
    estimate: { median: ms * 1e6 },
  });
  const run = {
    rows,
    config: {},
    floors: { rows: [floor("tcp", 0.05), floor("udp", 0.04)] },
  } as unknown as BenchRun;
  assert.equal(roundTrips(run, rows[3])!.toFixed(0), "3020");
  assert.equal(roundTrips(run, rows[4])!.toFixed(0), "1300");
  const noFloors = { rows, config: {}, floors: { rows: [] } } as unknown as BenchRun;
  assert.equal(roundTrips(noFloors, rows[3]), undefined);
  assert.equal(setupTable(noFloors).body[0][5], "151 ms");
});
