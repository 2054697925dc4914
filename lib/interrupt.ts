/**
 * What happens when the process is interrupted (SIGINT, SIGTERM): the parts
 * that own something outside the process (a network namespace, a peer
 * process, temporary files) register a cleanup here, and on the first signal
 * every cleanup runs. Then the process ends the way its entry point chose
 * ({@linkcode setInterruptEnd}; `main.ts` maps the signal to an exit status),
 * or, with none chosen, as the signal itself would end it.
 */

/** The signals that interrupt a run. */
export type InterruptSignal = "SIGINT" | "SIGTERM";

/** The process was interrupted by `signal`; handed to the end chosen with {@linkcode setInterruptEnd}. */
export class Interrupted extends Error {
  /** The signal that arrived. */
  readonly signal: InterruptSignal;
  constructor(signal: InterruptSignal) {
    super(`Interrupted by ${signal}`);
    this.name = "Interrupted";
    this.signal = signal;
  }
}

type Cleanup = () => unknown;

const cleanups = new Set<Cleanup>();
let end: ((why: Interrupted) => void) | undefined;
let installed = false;
let running: Promise<void> | undefined;

const onInt = () => interrupt("SIGINT");
const onTerm = () => interrupt("SIGTERM");

function install(on: boolean): void {
  if (installed === on) return;
  installed = on;
  if (on) {
    Deno.addSignalListener("SIGINT", onInt);
    Deno.addSignalListener("SIGTERM", onTerm);
  } else {
    Deno.removeSignalListener("SIGINT", onInt);
    Deno.removeSignalListener("SIGTERM", onTerm);
  }
}

function interrupt(signal: InterruptSignal): void {
  running ??= (async () => {
    await Promise.allSettled([...cleanups].map(async (fn) => await fn()));
    cleanups.clear();
    install(false);
    if (end) end(new Interrupted(signal));
    // No entry point chose an end: with no listener left, the signal ends the process.
    else Deno.kill(Deno.pid, signal);
  })();
}

/**
 * Registers `cleanup` to run when the process is interrupted; returns the
 * function that unregisters it (call it once the resource is released). The
 * signal listeners are installed only while a cleanup is registered.
 */
export function onInterrupt(cleanup: Cleanup): () => void {
  cleanups.add(cleanup);
  install(true);
  return () => {
    cleanups.delete(cleanup);
    if (cleanups.size === 0 && running === undefined) install(false);
  };
}

/**
 * Resolves at once when no interrupt arrived; otherwise once its cleanups
 * ran and the chosen end was called. An entry point awaits it before it
 * picks an exit status itself, so a command that returns because its
 * resources were cleaned up does not pre-empt the interrupt's status.
 */
export async function interruptSettled(): Promise<void> {
  await running;
}

/** Chooses how the process ends after an interrupt's cleanups ran (the entry point's choice). */
export function setInterruptEnd(fn: (why: Interrupted) => void): void {
  end = fn;
}
