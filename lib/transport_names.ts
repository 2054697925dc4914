/**
 * The names of the transports sbilab knows: the one vocabulary every layer,
 * the ground floor included, uses for them.
 */

/** The transports sbilab knows. */
export type TransportName = "h2c" | "h2-tls" | "h3";

/** Every transport name, in report order. */
export const TRANSPORTS: readonly TransportName[] = ["h2c", "h2-tls", "h3"];
