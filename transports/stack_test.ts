import assert from "node:assert/strict";
import { resolveStack, STACK_ENV } from "./stack.ts";
import { availableTransports } from "./mod.ts";

Deno.test("stack choice follows the option, then SBILAB_STACK, then native", () => {
  const saved = Deno.env.get(STACK_ENV);
  try {
    Deno.env.delete(STACK_ENV);
    assert.equal(resolveStack(), "native");
    assert.equal(resolveStack("deno"), "deno");
    Deno.env.set(STACK_ENV, "deno");
    assert.equal(resolveStack(), "deno");
    assert.equal(resolveStack("native"), "native");
    Deno.env.set(STACK_ENV, "quinn");
    assert.throws(() => resolveStack(), /Unknown stack quinn \(choose from native, deno\)/);
    assert.throws(() => resolveStack("hyper"), RangeError);
  } finally {
    if (saved === undefined) Deno.env.delete(STACK_ENV);
    else Deno.env.set(STACK_ENV, saved);
  }
});

Deno.test("both stacks have every transport here (the deno stack's h3 is Deno's QUIC)", async () => {
  assert.deepEqual(await availableTransports("deno"), ["h2c", "h2-tls", "h3"]);
  assert.deepEqual(await availableTransports("native"), ["h2c", "h2-tls", "h3"]);
});
