/**
 * What a concurrency row really had in flight. A plan of N in flight is a
 * ceiling: the peer's SETTINGS_MAX_CONCURRENT_STREAMS (h2) or its QUIC
 * stream credit (h3) may hold the client below it. Little's law gives the
 * mean number in flight from what was measured (L = λ W: the completion rate
 * times the mean latency), so a row can say what it had and why.
 */
import type { TransportName } from "../../transports/types.ts";
import { formatDuration, formatRate } from "../../lib/units.ts";

/** A row is called short of its plan below this share of it. */
export const SHORT_OF_PLAN = 0.9;

/** Mean requests in flight by Little's law: `reqPerSec` × `meanLatencyNs`. */
export function littlesLawInFlight(reqPerSec: number, meanLatencyNs: number): number {
  if (!(reqPerSec >= 0) || !(meanLatencyNs >= 0)) {
    throw new RangeError(
      `Little's law needs a rate and a latency ≥ 0, got ${reqPerSec}, ${meanLatencyNs}`,
    );
  }
  return reqPerSec * meanLatencyNs / 1e9;
}

/** The limit that can hold a transport's client below its plan, in words. */
export function streamLimitName(transport: TransportName): string {
  return transport === "h3"
    ? "the server's QUIC stream credit (initial_max_streams_bidi and the MAX_STREAMS it sends; sbilab's server grants 128)"
    : "the server's SETTINGS_MAX_CONCURRENT_STREAMS (sbilab's server: 100 unless configured)";
}

/**
 * A note for a row that had fewer than {@linkcode SHORT_OF_PLAN} of its
 * planned requests in flight; undefined when it had its plan.
 */
export function inFlightNote(
  transport: TransportName,
  planned: number,
  achieved: number,
  figures: { reqPerSec: number; meanLatencyNs: number; peerStreamLimit?: number },
): string | undefined {
  const limit = figures.peerStreamLimit;
  if (limit !== undefined && limit < planned) {
    const what = transport === "h3"
      ? `its QUIC stream credit, initial_max_streams_bidi ${limit}`
      : `SETTINGS_MAX_CONCURRENT_STREAMS ${limit}`;
    return `concurrency ${transport} ${planned} in flight: the server allowed ${limit} streams at once ` +
      `(${what}), so at most ${limit} requests were on the wire; the rest waited in the client and ` +
      `their latency includes that wait (Little's law over the client's time: about ${
        achieved.toFixed(0)
      } in flight). Read this row as ${limit} in flight, not ${planned}.`;
  }
  // a request or two between a response and the next send is the engine's own gap, not a limit
  if (achieved >= planned * SHORT_OF_PLAN || planned - achieved < 2) return undefined;
  const rate = formatRate(figures.reqPerSec);
  const mean = formatDuration(figures.meanLatencyNs);
  return `concurrency ${transport} ${planned} in flight: about ${
    achieved.toFixed(0)
  } were in flight ` +
    `(Little's law: ${rate} × mean ${mean}), ${
      (achieved / planned * 100).toFixed(0)
    } % of the plan. ` +
    `The engine opens a stream only when the peer allows one; the limit here is ${
      streamLimitName(transport)
    }. Compare rows by what they had in flight, not by their label.`;
}
