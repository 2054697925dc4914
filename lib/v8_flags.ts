/**
 * The V8 setting every sbilab process runs with. Under a steady request load
 * V8 grows its young generation (the nursery where short-lived objects are
 * born) towards 16 MiB per semi-space, and a server's or client's resident
 * size rises by 20–45 MiB before it settles; the objects of a request die
 * young, so a 1 MiB semi-space holds them just as well. Measured on the h3
 * server over 120,000 requests: resident growth +20.9–23.8 MiB by default,
 * +3.3–3.7 MiB with the cap, CPU per request the same within the runs'
 * spread; the SBI client at 64 streams took the same time per request either
 * way (four interleaved rounds). `deno.json`'s tasks, the launcher of the packed executable and the
 * processes sbilab spawns itself (`lab serve` for the benchmark, the
 * profiled client) all pass it.
 *
 * @module
 */

/** The `deno run` argument. */
export const V8_FLAGS_ARG = "--v8-flags=--max-semi-space-size=1";
