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

/**
 * V8's memory reducer, which the benchmark's own processes run without. When
 * a heap has settled and the process then allocates little, V8 starts a full
 * collection 8 s later to give memory back, and a second one half a second
 * after that. The benchmark's interleaved rounds make every process look like
 * that: a server, an echo peer or the bare runtime peer works for its 30 ms
 * blocks and sits idle for the rest of each ~0.6 s round. So these collections
 * came in pairs in every process during the rounds, each marking the whole
 * heap on the process's one CPU (about 20 ms of main-thread work on the 16 MiB
 * heap of `lab serve` or the client), and all peers share the server's CPU: a
 * collection in an idle peer delays the request of whichever arm runs then.
 * A server under a steady load never looks idle to the reducer, and
 * `lab serve` run on its own keeps it.
 */
export const NO_MEMORY_REDUCER = "--no-memory-reducer";

/** The `deno run` argument of the benchmark's client and of the `lab serve` it starts. */
export const BENCH_V8_FLAGS_ARG = `${V8_FLAGS_ARG},${NO_MEMORY_REDUCER}`;

/**
 * V8's collector as `globalThis.gc`, which the benchmark's client alone runs
 * with. With the young generation capped at 1 MiB, a request's objects that
 * outlive a scavenge move to the old generation, and the client's heap (about
 * 16 MiB, most of it sbilab's module graph) reached V8's limit every 4–10 s of
 * rounds: a full collection of 20–35 ms on the client's one CPU, inside
 * whichever 30 ms block ran then. The client collects before each round
 * instead (`roundCollector` in `bench/measure/rounds.ts`), so its heap starts
 * every round from what is live. Production-like runs (`lab load`, the
 * soak, `deno task lab`) do not expose it and collect only when V8 decides.
 */
export const EXPOSE_GC = "--expose-gc";

/** The `deno run` argument of `deno task bench`'s client: the benchmark's, and the exposed collector. */
export const BENCH_CLIENT_V8_FLAGS_ARG = `${BENCH_V8_FLAGS_ARG},${EXPOSE_GC}`;

/** The `deno run` argument of the benchmark's runtime peers (echo, bare runtime): V8's defaults but the reducer. */
export const PEER_V8_FLAGS_ARG = `--v8-flags=${NO_MEMORY_REDUCER}`;
