import assert from "node:assert/strict";
import { SetupRecorder } from "./setup_timings.ts";

Deno.test("setup recorder measures each phase from the start and counts the first mark only", () => {
  let t = 100;
  const r = new SetupRecorder(() => t);
  t = 110;
  r.received(); // before the request: not a first byte
  r.connected();
  t = 120;
  r.connected();
  r.tlsDone();
  assert.equal(r.timings(), undefined, "no response yet");
  t = 121;
  r.requestSent();
  t = 150;
  r.received();
  t = 155;
  r.received();
  r.responseComplete();
  t = 170;
  r.responseComplete();
  assert.deepEqual(r.timings(), { connectMs: 10, tlsMs: 20, firstByteMs: 50, totalMs: 55 });
});

Deno.test("setup recorder without TLS leaves tlsMs out; a response in the first datagram is its first byte", () => {
  let t = 0;
  const r = new SetupRecorder(() => t);
  r.requestSent(); // 0-RTT: the request leaves before anything came back
  t = 50;
  r.connected();
  r.received();
  r.responseComplete();
  assert.deepEqual(r.timings(), { connectMs: 50, firstByteMs: 50, totalMs: 50 });
});

Deno.test("setup recorder takes a first byte timed elsewhere, only after the request", () => {
  let t = 1000;
  const r = new SetupRecorder(() => t);
  r.firstByteAgo(0); // before the request: ignored
  r.connected();
  t = 1010;
  r.requestSent();
  t = 1040;
  r.firstByteAgo(10); // arrived at 1030 by the module's clock, read at 1040
  r.responseComplete();
  assert.deepEqual(r.timings(), { connectMs: 0, firstByteMs: 30, totalMs: 40 });
});

Deno.test("setup recorder never puts the first byte before the transport was up", () => {
  let t = 0;
  const r = new SetupRecorder(() => t);
  r.requestSent();
  t = 10;
  r.firstByteAgo(1); // timed inside the datagram that is marked below
  r.connected();
  r.responseComplete();
  assert.deepEqual(r.timings(), { connectMs: 10, firstByteMs: 10, totalMs: 10 });
});
