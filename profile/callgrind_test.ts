import assert from "node:assert/strict";
import {
  byPart,
  callgrindSide,
  objectRows,
  parseAnnotate,
  partOf,
  perRequestByObject,
  perUnitByObject,
  renderObjectCosts,
  renderPartCosts,
} from "./callgrind.ts";

const annotate = (total: number, deno: number, h2: number, libc: number) => `
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
${total.toLocaleString("en")} (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                    file:function
--------------------------------------------------------------------------------
${deno.toLocaleString("en")} (56.41%)  ???:0x0000000003853d00 [/x/node_modules/deno/deno]
${h2.toLocaleString("en")} ( 2.65%)  sbh2.c:sbh2_conn_recv [/repo/build/libsbilab_h2.so]
${
  libc.toLocaleString("en")
} ( 0.43%)  ./string/memset.S:__memset_avx2 [/usr/lib/x86_64-linux-gnu/libc.so.6]
`;

Deno.test("parseAnnotate sums instructions per object and keeps what the listing left out", () => {
  const m = parseAnnotate(annotate(1_000_000, 600_000, 300_000, 50_000));
  assert.equal(m.get("deno"), 600_000);
  assert.equal(m.get("libsbilab_h2.so"), 300_000);
  assert.equal(m.get("libc.so.6"), 50_000);
  assert.equal(m.get("(below threshold)"), 50_000);
  assert.throws(() => parseAnnotate("nothing here"), SyntaxError);
});

Deno.test("parseAnnotate gives inlined rows to their function's object and [???] to JIT code", () => {
  const text = `
1,050 (100.0%)  PROGRAM TOTALS
  500 (50.00%)  ./elf/dl-lookup.c:do_lookup_x [/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2]
  200 (20.00%)  ./elf/dl-new-hash.h:do_lookup_x
  150 (15.00%)  ???:0x0000000012345678 [???]
  100 (10.00%)  sbh2_server.c:on_header'2 [/repo/build/libsbilab_h2.so]
   40 ( 4.00%)  ???:on_header
   30 ( 3.00%)  stdatomic.h:helper
`;
  assert.deepEqual(Object.fromEntries(parseAnnotate(text)), {
    "ld-linux-x86-64.so.2": 700,
    "???": 150,
    "libsbilab_h2.so": 140,
    "(no object)": 30,
    "(below threshold)": 30,
  });
});

Deno.test("perRequestByObject cancels what both runs share and divides by the extra requests", () => {
  const small = parseAnnotate(annotate(1_000_000, 600_000, 300_000, 100_000));
  // 1000 more requests: 500 more instructions each in deno, 200 in the module, none in libc
  const large = parseAnnotate(annotate(1_700_000, 1_100_000, 500_000, 100_000));
  const rows = perRequestByObject(small, 1000, large, 2000);
  assert.deepEqual(rows.map((r) => [r.object, r.perRequest]), [
    ["deno", 500],
    ["libsbilab_h2.so", 200],
  ]);
  assert.match(renderObjectCosts("client", rows), /^client: 700 instructions per request/);
  assert.throws(() => perRequestByObject(small, 5, large, 5), RangeError);
  assert.deepEqual(
    Object.fromEntries(perUnitByObject(small, 1000, large, 2000)),
    { deno: 500, "libsbilab_h2.so": 200, "libc.so.6": 0 },
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

// Two real callgrind_annotate listings (`--threshold=100 --auto=no`) of sbilab's h2c server
// under callgrind (runs of 100 and 400 requests after the same start-up and 200 of warm-up),
// cut to their largest rows, the first rows without an object with the rows that say where
// their function or file lives, some [???] rows and the module's and nghttp2's largest rows;
// what was cut counts as "(below threshold)".
const FIXTURE = new URL("./testdata/", import.meta.url);

Deno.test("callgrindSide splits a recorded server run into C, libc, Deno and JIT per request", async () => {
  const read = (n: number) => Deno.readTextFile(new URL(`server-h2c-${n}.txt`, FIXTURE));
  const runs: [Map<string, number>, Map<string, number>] = [
    parseAnnotate(await read(100)),
    parseAnnotate(await read(400)),
  ];
  const side = callgrindSide("server", "sbilab", runs, [100, 400]);
  assert.equal(side.side, "server");
  const round = (r: Record<string, number>) =>
    Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Math.round(v)]));
  // inlined rows (sbwire.h:on_header, sbh2_server.c:0x…) belong to the module, arena.c:free to libc
  assert.deepEqual(round(side.perObject), {
    "deno": 60_640,
    "???": 13_028,
    "libc.so.6": 10_509,
    "libnghttp2.so.14.24.1": 6_923,
    "libsbilab_h2.so": 1_115,
    "ld-linux-x86-64.so.2": 1,
    "(below threshold)": 253_192,
  });
  assert.deepEqual(round(side.parts), {
    native: 8_038,
    libc: 10_509,
    runtime: 60_640,
    jit: 13_028,
    other: 253_192,
    total: 345_408,
  });
});
