import assert from "node:assert/strict";
import { parseAnnotate, perRequestByObject, renderObjectCosts } from "./callgrind.ts";

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
});
