/** How a connection starts and the phases of its first request, as the cold scenario records them. */
import type { TransportName } from "../../transports/types.ts";

/** How a connection starts. */
export type SetupMode = "full" | "resumed" | "0-rtt";

/** The phases of one cold request, in report order. */
export const SETUP_PHASES = ["connect", "tls", "first-byte", "total"] as const;

/** One phase. */
export type SetupPhase = typeof SETUP_PHASES[number];

/** The modes a transport has: no TLS on h2c, 0-RTT only on h3. */
export function setupModes(transport: TransportName): SetupMode[] {
  if (transport === "h2c") return ["full"];
  return transport === "h3" ? ["full", "resumed", "0-rtt"] : ["full", "resumed"];
}
