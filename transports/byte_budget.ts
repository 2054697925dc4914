/**
 * A process-wide count of bytes held for one purpose (request bodies being
 * read, responses queued for a slow peer), with a ceiling. Servers take bytes
 * before they hold them and give them back when done; a refused take lets the
 * server answer 503 instead of growing without bound.
 */

/** Raised when the process holds as many request-body bytes as its budget allows. */
export class BodyBudgetError extends RangeError {
  constructor(limit: number) {
    super(`Request bodies in flight exceed ${limit} bytes`);
    this.name = "BodyBudgetError";
  }
}

/** Bytes held at once, with a ceiling. */
export class ByteBudget {
  /** The ceiling in bytes. */
  readonly limit: number;
  #used = 0;
  #peak = 0;

  constructor(limit: number) {
    if (!(limit > 0)) throw new RangeError(`Budget must be positive, got ${limit}`);
    this.limit = limit;
  }

  /** Bytes held now. */
  get used(): number {
    return this.#used;
  }

  /** Most bytes ever held at once. */
  get peak(): number {
    return this.#peak;
  }

  /** Takes `n` bytes; false (and nothing taken) when that would pass the ceiling. */
  take(n: number): boolean {
    if (this.#used + n > this.limit) return false;
    this.#used += n;
    if (this.#used > this.#peak) this.#peak = this.#used;
    return true;
  }

  /** Gives back `n` bytes taken before. */
  release(n: number): void {
    this.#used = Math.max(0, this.#used - n);
  }
}

/** Default ceiling of request-body bytes held in one process: 256 MiB. */
export const DEFAULT_BODY_BUDGET_BYTES = 256 * 1024 * 1024;

/** The budget servers share when none is given: one per process. */
export const defaultBodyBudget: ByteBudget = new ByteBudget(DEFAULT_BODY_BUDGET_BYTES);

/** Default ceiling of response bytes handed to the runtime and not yet sent, per process: 64 MiB. */
export const DEFAULT_RESPONSE_BUDGET_BYTES = 64 * 1024 * 1024;

/** The response budget servers share when none is given: one per process. */
export const defaultResponseBudget: ByteBudget = new ByteBudget(DEFAULT_RESPONSE_BUDGET_BYTES);
