import assert from "node:assert/strict";
import {
  byPart,
  callgrindSide,
  objectRows,
  parseCallgrindOut,
  partOf,
  perRequestByObject,
  perUnitByObject,
  readCallgrindFile,
  renderCallgrindSummary,
  renderObjectCosts,
  renderPartCosts,
} from "./callgrind.ts";

/** A callgrind output file: deno calls into the module, which runs code inlined from a header. */
const out = (deno: number, h2: number, inlined: number, jit: number, libc: number) =>
  `# callgrind format
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: ${deno + h2 + inlined + jit + libc}

ob=(1) /x/node_modules/deno/deno
fl=(1) ???
fn=(1) 0x0000000003853d00
0 ${deno}
cob=(2) /repo/build/libsbilab_h2.so
cfi=(2) sbh2_server.c
cfn=(2) sbh2_sconn_recv
calls=1 0
0 ${h2 + inlined + libc}
cob=(3) ???
cfn=(4) 0x0000000020612680
calls=3 0
0 ${jit}

ob=(2)
fl=(2)
fn=(2)
12 ${h2}
fi=(3) sbwire.h
+4 ${inlined}
fe=(2)
cob=(4) /usr/lib/x86_64-linux-gnu/libc.so.6
cfn=(5) __memcpy_avx_unaligned_erms
calls=2 0
* ${libc}

ob=(4)
fl=(4) ./string/memmove.S
fn=(5)
0 ${libc}

ob=(3)
fl=(1)
fn=(4)
0 ${jit}
`;

Deno.test("parseCallgrindOut counts each object's own instructions, inlined code where it runs", () => {
  const m = parseCallgrindOut(out(600_000, 250_000, 50_000, 80_000, 20_000));
  assert.deepEqual(Object.fromEntries(m), {
    "deno": 600_000, // its calls' inclusive costs are the callees'
    "libsbilab_h2.so": 300_000, // sbwire.h's inlined lines run in the module
    "libc.so.6": 20_000,
    "???": 80_000, // code in no object file: V8's generated code
  });
  assert.throws(() => parseCallgrindOut("nothing here"), SyntaxError);
});

// Two dumps of nghttpd under callgrind (callgrind_control --dump) while sbilab's SBI client
// paused on one warm h2c connection: after 50 requests (counters zeroed after the warm-up),
// then after 200 more. The event loop's frames are still running at each dump; their
// unfinished calls must not count as their own cost (callgrind_annotate 3.19 counts them,
// and says 182k instructions per request instead of 20k).
const FIXTURE = new URL("./testdata/", import.meta.url);

Deno.test("callgrindSide gives a recorded pair of dumps' instructions per request by object and part", async () => {
  const read = (part: number) =>
    readCallgrindFile(new URL(`nghttpd.callgrind.${part}`, FIXTURE).pathname);
  const side = callgrindSide("server", "nghttpd", [await read(1), await read(2)], [50, 200]);
  const round = (r: Record<string, number>) =>
    Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Math.round(v)]));
  assert.deepEqual(round(side.perObject), {
    "libnghttp2.so.14.24.1": 13_845,
    "nghttpd": 3_273,
    "libjemalloc.so.2": 1_199,
    "libc.so.6": 1_098,
    "libev.so.4.0.0": 497,
    "libstdc++.so.6.0.30": 228,
  });
  assert.deepEqual(round(side.parts), {
    native: 19_042,
    libc: 1_098,
    runtime: 0,
    jit: 0,
    other: 0,
    total: 20_139,
  });
});

Deno.test("perRequestByObject cancels what both runs share and divides by the extra requests", () => {
  const small = parseCallgrindOut(out(600_000, 250_000, 50_000, 80_000, 100_000));
  // 1000 more requests: 500 more instructions each in deno, 200 in the module, none elsewhere
  const large = parseCallgrindOut(out(1_100_000, 400_000, 100_000, 80_000, 100_000));
  const rows = perRequestByObject(small, 1000, large, 2000);
  assert.deepEqual(rows.map((r) => [r.object, r.perRequest]), [
    ["deno", 500],
    ["libsbilab_h2.so", 200],
  ]);
  assert.match(renderObjectCosts("client", rows), /^client: 700 instructions per request/);
  assert.throws(() => perRequestByObject(small, 5, large, 5), RangeError);
  assert.deepEqual(
    Object.fromEntries(perUnitByObject(small, 1000, large, 2000)),
    { deno: 500, "libsbilab_h2.so": 200, "libc.so.6": 0, "???": 0 },
  );
});

Deno.test("partOf files modules and C programs with their libraries, apart from libc, Deno and JIT", () => {
  const cases: [string, string][] = [
    ["libsbilab_h3.so", "native"],
    ["libngtcp2.so.16.0.0", "native"],
    ["libnghttp3.so.9.2.1", "native"],
    ["libgnutls.so.30.34.3", "native"],
    ["libssl.so.3", "native"],
    ["nghttpd", "native"],
    ["h2load", "native"],
    ["sbilab_load_check", "native"],
    ["libc.so.6", "libc"],
    ["libm.so.6", "libc"],
    ["ld-linux-x86-64.so.2", "libc"],
    ["libgcc_s.so.1", "libc"],
    ["deno", "runtime"],
    ["???", "jit"],
    ["(below threshold)", "other"],
    ["(no object)", "other"],
    ["vgpreload_core-amd64-linux.so", "other"],
  ];
  assert.deepEqual(cases.map(([o]) => [o, partOf(o)]), cases);
  const per = new Map([
    ["deno", 900],
    ["???", 300],
    ["libsbilab_h2.so", 150],
    [
      "libnghttp2.so.14",
      50,
    ],
    ["libc.so.6", 80],
    ["(below threshold)", 20],
  ]);
  assert.deepEqual(byPart(per), {
    native: 200,
    libc: 80,
    runtime: 900,
    jit: 300,
    other: 20,
    total: 1500,
  });
  const parts = renderPartCosts(per);
  assert.match(parts, /^C \(module\/program \+ libs\)\s+200\s+13\.3 %$/m);
  assert.match(parts, /^JIT code\s+300\s+20\.0 %$/m);
  // small objects fold into one row of the object table, but still count in their part
  assert.deepEqual(
    objectRows(new Map([["deno", 10_000], ["libnghttp2.so.14", 20]])).map((r) => r.object),
    ["deno", "(other objects)"],
  );
  assert.equal(byPart(new Map([["deno", 10_000], ["libnghttp2.so.14", 20]])).native, 20);
});

Deno.test("renderCallgrindSummary gives each part's median and range over the runs", () => {
  const side = (total: number) => ({
    side: "server" as const,
    name: "sbilab",
    perObject: {},
    parts: { native: total / 2, libc: 0, runtime: total / 4, jit: total / 4, other: 0, total },
  });
  const run = (transport: string, total: number) => ({
    schema: "sbilab-callgrind/1" as const,
    transport,
    stack: "native",
    sizeBytes: 256,
    streams: 1,
    warmup: 600,
    requests: [250, 1000] as [number, number],
    sides: [side(total)],
  });
  const text = renderCallgrindSummary([
    run("h3", 100_000),
    run("h2c", 40_000),
    run("h3", 120_000),
    run("h3", 90_000),
  ]);
  const cells = (start: string) =>
    text.split("\n").find((l) => l.startsWith(start))?.trim().split(/\s{2,}/);
  assert.deepEqual(cells("h3"), [
    "h3",
    "server (sbilab)",
    "3",
    "100.0k [90.0k–120.0k]",
    "50.0k [45.0k–60.0k]",
    "0.0k [0.0k–0.0k]",
    "25.0k [22.5k–30.0k]",
    "25.0k [22.5k–30.0k]",
    "0.0k [0.0k–0.0k]",
  ]);
  assert.deepEqual(cells("h2c")?.slice(0, 4), ["h2c", "server (sbilab)", "1", "40.0k"]);
});
