/**
 * {@linkcode H3DatagramStats}: the datagram counters and path sizes the
 * native HTTP/3 module keeps per connection and per server (enum sbh3_stat).
 */

/** Datagram counters of one connection, or totals of a server (enum sbh3_stat). */
export interface H3DatagramStats {
  /** Datagrams sent and their bytes. */
  datagramsSent: number;
  bytesSent: number;
  /** Largest UDP payload sent. */
  largestSent: number;
  /** Datagrams received (and accepted) and their bytes. */
  datagramsReceived: number;
  bytesReceived: number;
  /** Largest UDP payload received. */
  largestReceived: number;
  /** Received datagrams dropped for exceeding the advertised max_udp_payload_size. */
  oversizeDropped: number;
  /** The path's current largest payload (PMTUD result or the explicit size); 0 for server totals. */
  pathMaxPayload: number;
  /** The peer's max_udp_payload_size; 0 until known, and for server totals. */
  peerMaxPayload: number;
  /** Response body bytes held now for open streams. */
  queuedBytes: number;
  /** Retry packets sent (server) or received (client). */
  retries: number;
  /** NEW_TOKEN tokens issued (server) or received (client). */
  newTokens: number;
  /** 1-RTT key updates: ours when started, the peer's up to a PTO after it. */
  keyUpdates: number;
  /** Datagrams sent with an ECN codepoint (ngtcp2 marks 10 while it validates the path, all once validated). */
  ecnSent: number;
  /** Datagrams received with an ECN codepoint and reported to QUIC. */
  ecnReceived: number;
  /** The QUIC version in use (0x1, or 0x709a50c4 for the v2 draft); 0 for server totals. */
  version: number;
}

const STAT_FIELDS: (keyof H3DatagramStats)[] = [
  "datagramsSent",
  "bytesSent",
  "largestSent",
  "datagramsReceived",
  "bytesReceived",
  "largestReceived",
  "oversizeDropped",
  "pathMaxPayload",
  "peerMaxPayload",
  "queuedBytes",
  "retries",
  "newTokens",
  "keyUpdates",
  "ecnSent",
  "ecnReceived",
  "version",
];

/** Reads the counters through `read(out, n)` (an sbh3_*_stats call); null when it fails. */
export function readStats(
  read: (out: BigUint64Array<ArrayBuffer>, n: bigint) => number,
): H3DatagramStats | null {
  const out = new BigUint64Array(STAT_FIELDS.length);
  const n = read(out, BigInt(out.length));
  if (n < 0) return null;
  const stats = {} as H3DatagramStats;
  STAT_FIELDS.forEach((k, i) => (stats[k] = i < n ? Number(out[i]) : 0));
  return stats;
}
