/**
 * Serving first: a share of each turn of the event loop for work that is not
 * serving (TLS handshakes). Steps that enter the gate run at once until the
 * turn's budget is spent; later ones wait for the next turn (a timer), so the
 * reads and writes of established connections that completed meanwhile run
 * in between, whatever a flood of handshakes costs. Steps are not split: one
 * that costs more than the budget still runs whole, alone in its turn.
 */

/** Default budget of gated work per turn of the event loop, ms. */
export const DEFAULT_TURN_BUDGET_MS = 4;

/** Runs gated work in slices of at most {@linkcode budgetMs} per turn of the event loop. */
export class WorkGate {
  /** Gated work allowed per turn, ms. */
  readonly budgetMs: number;
  #used = 0;
  /** A step entered and has not reported what it spent yet: the next waits for it. */
  #held = false;
  #waiting: (() => void)[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Steps that had to wait for a later turn (for tests and diagnostics). */
  deferred = 0;

  constructor(budgetMs = DEFAULT_TURN_BUDGET_MS) {
    if (!(budgetMs > 0)) throw new RangeError(`Invalid turn budget ${budgetMs} ms`);
    this.budgetMs = budgetMs;
  }

  /**
   * Resolves when a step may run: at once while the turn's budget lasts and
   * no other step is running. Every step must call {@linkcode spent} after
   * it (in a `finally`), which lets the next one in.
   */
  enter(): Promise<void> {
    if (!this.#held && this.#used < this.budgetMs && this.#waiting.length === 0) {
      this.#held = true;
      return Promise.resolve();
    }
    this.deferred++;
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#waiting.push(resolve);
    if (!this.#held) this.#nextTurn();
    return promise;
  }

  /** Counts `ms` of gated work just done; the next waiting step runs in this turn while budget is left. */
  spent(ms: number): void {
    this.#held = false;
    this.#used += ms;
    if (this.#used >= this.budgetMs) this.#nextTurn();
    else this.#release();
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (!next) return;
    this.#held = true;
    next();
  }

  /** At the next turn: a fresh budget, and the first waiting step runs (which lets in the next). */
  #nextTurn(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#used = 0;
      if (!this.#held) this.#release();
    }, 0);
  }
}

/** The gate every server's TLS handshakes share: one per process, as they share its thread. */
export const handshakeGate: WorkGate = new WorkGate();
