import assert from "node:assert/strict";
import { connectionsWithin, FD_RESERVE, freeFds, getFdLimit } from "./fd_limit.ts";

const dec = new TextDecoder();

Deno.test("raiseFdLimit lifts a lowered soft limit back to the hard limit", async () => {
  // In a child whose hard limit is 400; Deno raises its own soft limit at start,
  // so the child lowers it to 200 through libc first.
  const code = `
    import { getFdLimit, raiseFdLimit } from ${
    JSON.stringify(new URL("./fd_limit.ts", import.meta.url).href)
  };
    import { libc } from ${JSON.stringify(new URL("../lib/libc.ts", import.meta.url).href)};
    libc().setrlimit(7, new BigUint64Array([200n, 400n]));
    const before = getFdLimit();
    const after = raiseFdLimit();
    console.log(JSON.stringify({ before, after }));
  `;
  const out = await new Deno.Command("sh", {
    args: ["-c", 'ulimit -Sn 400 && ulimit -Hn 400 && exec "$0" eval "$1"', Deno.execPath(), code],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, dec.decode(out.stderr));
  const { before, after } = JSON.parse(dec.decode(out.stdout));
  assert.deepEqual(before, { soft: 200, hard: 400 });
  assert.deepEqual(after, { soft: 400, hard: 400 });
});

Deno.test("connectionsWithin splits what the limit leaves after the reserve", () => {
  assert.equal(connectionsWithin({ soft: 256, hard: 256 }, 2), (256 - FD_RESERVE) / 2);
  assert.equal(connectionsWithin({ soft: 10, hard: 10 }, 2), 1);
  const now = getFdLimit();
  assert.ok(now && now.soft > 0 && now.hard >= now.soft);
});

Deno.test("freeFds falls by one for each descriptor opened and rises again when it closes", () => {
  const before = freeFds();
  assert.ok(before !== undefined && before > 10, `free descriptors read ${before}`);
  const files = Array.from({ length: 5 }, () => Deno.openSync("/dev/null"));
  try {
    assert.equal(freeFds(), before - 5);
  } finally {
    for (const f of files) f.close();
  }
  assert.equal(freeFds(), before);
});
