/**
 * Stop means stop: a watchdog on its own thread that ends `lab serve` when a
 * graceful stop takes too long, whatever the serving thread is doing. On the
 * first SIGINT or SIGTERM it starts a timer of `boundMs`; when the timer
 * fires, or a second signal arrives, it ends the process at once with the
 * signal's status (130 or 143) through libc's `_exit`, which needs no help
 * from the main thread (a `Deno.exit` from a worker would only end the
 * worker, and the main thread's signal handlers wait for its event loop).
 * A graceful stop that finishes in time ends the process as usual and stops
 * the watchdog first.
 */

/** The worker: its own signal listeners, its own timer, its own `_exit`. */
const WORKER_SOURCE = `
const libc = Deno.dlopen("libc.so.6", { _exit: { parameters: ["i32"], result: "void" } });
let boundMs = 0;
let first = undefined;
const on = (signal, status) => () => {
  if (first !== undefined) libc.symbols._exit(status);
  first = setTimeout(() => libc.symbols._exit(status), boundMs);
};
self.onmessage = (e) => {
  boundMs = e.data.boundMs;
  Deno.addSignalListener("SIGINT", on("SIGINT", 130));
  Deno.addSignalListener("SIGTERM", on("SIGTERM", 143));
  self.postMessage("armed");
};
`;

/** A running watchdog; `stop()` ends it (the graceful stop finished in time). */
export interface StopWatchdog {
  stop(): void;
}

/**
 * Starts the watchdog with a stop bound of `boundMs`; resolves once its
 * signal listeners are in place. Needs FFI (`--allow-ffi`) and Linux's libc.
 */
export async function startStopWatchdog(boundMs: number): Promise<StopWatchdog> {
  if (!(boundMs >= 0)) throw new RangeError(`Invalid stop bound ${boundMs} ms`);
  const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
  const worker = new Worker(url, { type: "module" });
  const armed = Promise.withResolvers<void>();
  worker.onmessage = () => armed.resolve();
  worker.onerror = (e) => {
    e.preventDefault();
    armed.reject(new Error(`The stop watchdog failed: ${e.message}`));
  };
  worker.postMessage({ boundMs });
  try {
    await armed.promise;
  } catch (err) {
    worker.terminate();
    throw err;
  } finally {
    URL.revokeObjectURL(url);
  }
  return { stop: () => worker.terminate() };
}
