import assert from "node:assert/strict";
import { inFlightNote, littlesLawInFlight } from "./in_flight.ts";

Deno.test("Little's law gives the mean in flight from rate and mean latency", () => {
  assert.equal(littlesLawInFlight(56_000, 1.63e6), 91.28);
  assert.equal(littlesLawInFlight(0, 1e6), 0);
  assert.throws(() => littlesLawInFlight(Number.NaN, 1), RangeError);
});

Deno.test("a concurrency row short of its plan says what it had and which limit held it", () => {
  const figures = { reqPerSec: 56_000, meanLatencyNs: 1.63e6 };
  const h3 = inFlightNote("h3", 256, 91.3, figures)!;
  assert.match(h3, /^concurrency h3 256 in flight: about 91 were in flight/);
  assert.match(h3, /56\.0k req\/s × mean 1\.63 ms/);
  assert.match(h3, /QUIC stream credit/);
  assert.match(inFlightNote("h2c", 256, 91.3, figures)!, /SETTINGS_MAX_CONCURRENT_STREAMS/);
  assert.equal(inFlightNote("h2c", 256, 240, figures), undefined, "94 % of the plan is the plan");
  assert.equal(
    inFlightNote("h2c", 8, 6.5, figures),
    undefined,
    "one or two short is the engine's gap",
  );
});

Deno.test("a peer's stream limit below the plan is named, whatever the client queued", () => {
  const note = inFlightNote("h2c", 32, 31, {
    reqPerSec: 30_000,
    meanLatencyNs: 1e6,
    peerStreamLimit: 4,
  })!;
  assert.match(note, /the server allowed 4 streams at once \(SETTINGS_MAX_CONCURRENT_STREAMS 4\)/);
  assert.match(note, /Read this row as 4 in flight, not 32/);
  const h3 = inFlightNote("h3", 256, 105, {
    reqPerSec: 1,
    meanLatencyNs: 1,
    peerStreamLimit: 128,
  })!;
  assert.match(h3, /initial_max_streams_bidi 128/);
  assert.equal(
    inFlightNote("h2c", 64, 63, { reqPerSec: 1, meanLatencyNs: 1, peerStreamLimit: 100 }),
    undefined,
    "a limit above the plan held nothing back",
  );
});
