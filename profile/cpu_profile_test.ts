import assert from "node:assert/strict";
import {
  breakdown,
  busySamples,
  type CpuProfile,
  frameCategory,
  parseCpuProfile,
  renderBreakdown,
  stackCategory,
} from "./cpu_profile.ts";

const root = "file:///repo";
const frame = (functionName: string, url = "") => ({ functionName, url });

/**
 * A small profile: a request loop that calls the SBI headers and an FFI
 * wrapper, a GC node and an idle node. Samples every 10 µs from t = 1000.
 */
function synthetic(): CpuProfile {
  return {
    nodes: [
      { id: 1, callFrame: frame("(root)"), children: [2, 3, 4] },
      { id: 2, callFrame: frame("(idle)") },
      { id: 3, callFrame: frame("(garbage collector)") },
      {
        id: 4,
        callFrame: frame("request", `${root}/transports/h2/client.ts`),
        children: [5, 6, 7],
      },
      { id: 5, callFrame: frame("sbiRequestHeaders", `${root}/transports/sbi_headers.ts`) },
      { id: 6, callFrame: frame("recv", `${root}/transports/h2/ffi.ts`) },
      // an anonymous helper below the headers names no category: the caller's counts
      { id: 7, callFrame: frame("hex", `${root}/transports/sbi_headers.ts`), children: [8] },
      { id: 8, callFrame: frame("(anonymous)", `${root}/somewhere_else.ts`) },
    ],
    startTime: 1000,
    endTime: 1100,
    // t = 1000 (delta 0) … 1090: idle, idle, headers, headers, ffi, gc, glue, hex-child, idle, headers
    samples: [2, 2, 5, 5, 6, 3, 4, 8, 2, 5],
    timeDeltas: [0, 10, 10, 10, 10, 10, 10, 10, 10, 10],
  };
}

Deno.test("frameCategory names the SBI headers, FFI wrappers, handler and runtime nodes", () => {
  assert.equal(frameCategory(frame("x", `${root}/transports/sbi_headers.ts`)), "SBI headers");
  assert.equal(frameCategory(frame("send", `${root}/transports/h2/server_ffi.ts`)), "FFI calls");
  assert.equal(
    frameCategory(frame("flush", `${root}/transports/h3/h3_server_endpoint.ts`)),
    "FFI calls",
  );
  assert.equal(frameCategory(frame("io", `${root}/transports/h3/h3_client_conn.ts`)), "FFI calls");
  assert.equal(
    frameCategory(frame("pollEach", `${root}/transports/h3/h3_server_endpoint.ts`)),
    "transport glue (JS)",
  );
  assert.equal(frameCategory(frame("handle", `${root}/handler/nbench.ts`)), "handler");
  assert.equal(frameCategory(frame("op_net_recv_udp")), "socket wake-up / reactor");
  assert.equal(frameCategory(frame("Timeout", "ext:deno_node/internal/timers.mjs")), "timers");
  assert.equal(frameCategory(frame("(garbage collector)")), "GC");
  assert.equal(
    frameCategory(frame("encode", `${root}/transports/wire.ts`)),
    "encode",
  );
  assert.equal(
    frameCategory(frame("decodeResponseBlock", `${root}/transports/wire.ts`)),
    "header conversion",
  );
  assert.equal(frameCategory(frame("main", `${root}/elsewhere.ts`)), undefined);
});

Deno.test("stackCategory lets the first frame that names a category decide, leaf first", () => {
  const stack = [
    frame("(anonymous)", `${root}/x.ts`),
    frame("nextTraceparent", `${root}/transports/sbi_headers.ts`),
    frame("request", `${root}/transports/h2/client.ts`),
  ];
  assert.equal(stackCategory(stack), "SBI headers");
  assert.equal(stackCategory([frame("main", `${root}/x.ts`)]), "other");
});

Deno.test("breakdown sums each category's samples inside the window per request", () => {
  const b = breakdown(synthetic(), { requests: 2 });
  const us = Object.fromEntries(b.categories.map((c) => [c.category, c.perRequestUs]));
  // 10 samples of 10 µs (the last lasts one median interval): headers 3 + hex child 1
  assert.equal(us["SBI headers"], 20);
  assert.equal(us["FFI calls"], 5);
  assert.equal(us["GC"], 5);
  assert.equal(us["transport glue (JS)"], 5);
  assert.equal(us["idle (waiting)"], 15);
  assert.equal(b.busyPerRequestUs, 35);
  const share = b.categories.find((c) => c.category === "SBI headers")!.share;
  assert.ok(Math.abs(share - 40 / 70) < 1e-9);
  assert.equal(b.top[0].name, "sbiRequestHeaders sbi_headers.ts");
});

Deno.test("breakdown keeps only the samples inside the measured window", () => {
  // window [1020, 1060): headers, headers, ffi, gc
  const b = breakdown(synthetic(), { requests: 1, fromUs: 1020, toUs: 1060 });
  assert.equal(b.samples, 4);
  assert.deepEqual(
    b.categories.map((c) => [c.category, c.totalUs]),
    [["FFI calls", 10], ["SBI headers", 20], ["GC", 10]],
  );
});

Deno.test("breakdown and parseCpuProfile refuse input that would give no figure", () => {
  assert.throws(() => breakdown(synthetic(), { requests: 0 }), RangeError);
  assert.throws(() => breakdown(synthetic(), { requests: 1, fromUs: 5, toUs: 5 }), RangeError);
  assert.throws(() => parseCpuProfile({ nodes: [] }), SyntaxError);
  assert.throws(
    () => parseCpuProfile({ ...synthetic(), timeDeltas: [0] }),
    /differ in length/,
  );
  assert.equal(parseCpuProfile(JSON.parse(JSON.stringify(synthetic()))).samples.length, 10);
});

Deno.test("renderBreakdown prints every busy category, the busy total and the CPU time", () => {
  const text = renderBreakdown("client", breakdown(synthetic(), { requests: 2 }), {
    userUs: 100,
    systemUs: 50,
  });
  assert.match(text, /^client: 2 requests/);
  assert.match(text, /SBI headers\s+20\.0\s+57\.1 %/);
  assert.match(text, /busy on the main thread \(profile\)\s+35\.0/);
  assert.match(text, /process CPU, system \(kernel\)\s+25\.0/);
  assert.doesNotMatch(text, /^idle \(waiting\)/m);
});

Deno.test("busySamples counts the samples that caught the thread at work, not the idle ones", () => {
  const frame = (functionName: string) => ({
    functionName,
    url: "",
    lineNumber: 0,
    columnNumber: 0,
  });
  const profile = {
    nodes: [
      { id: 1, callFrame: frame("(root)"), children: [2, 3] },
      { id: 2, callFrame: frame("(idle)") },
      { id: 3, callFrame: frame("handle") },
    ],
    startTime: 0,
    endTime: 40,
    samples: [2, 2, 3, 2],
    timeDeltas: [10, 10, 10, 10],
  };
  assert.equal(busySamples(parseCpuProfile(profile)), 1);
  assert.equal(
    busySamples(parseCpuProfile({ ...profile, samples: [2, 2], timeDeltas: [10, 10] })),
    0,
  );
});
