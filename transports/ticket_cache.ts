/**
 * The client's in-memory cache of TLS 1.3 session tickets: one ticket per
 * key (the origin plus everything that decides whom the client trusts and
 * who it is), taken on use so a ticket is offered once, and bounded in size
 * (the oldest entry goes first).
 */

/** Bounded map from an origin key to its newest ticket. */
export class TicketCache {
  #max: number;
  #map = new Map<string, Uint8Array>();

  /** `maxEntries`: how many origins keep a ticket. Default 256. */
  constructor(maxEntries = 256) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`Ticket cache size must be a positive integer: ${maxEntries}`);
    }
    this.#max = maxEntries;
  }

  /** Removes and returns the ticket for `key`, if any. */
  take(key: string): Uint8Array | undefined {
    const t = this.#map.get(key);
    this.#map.delete(key);
    return t;
  }

  /** Stores the newest ticket for `key`, evicting the oldest entry when full. */
  put(key: string, ticket: Uint8Array): void {
    this.#map.delete(key);
    this.#map.set(key, ticket);
    if (this.#map.size > this.#max) this.#map.delete(this.#map.keys().next().value!);
  }

  /** Forgets every ticket. */
  clear(): void {
    this.#map.clear();
  }

  /** Number of keys holding a ticket. */
  get size(): number {
    return this.#map.size;
  }
}

/** The cache every native client (h2 over TLS, h3) of this process shares unless given its own; keys differ per transport. */
export const sharedTicketCache = new TicketCache();
