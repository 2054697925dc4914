/**
 * Emulated WAN links: two network namespaces (client and server side)
 * joined by a userspace TUN relay that applies per-direction delay, jitter,
 * loss and loss bursts, a rate limit with a drop-tail queue, reordering,
 * duplication and blackhole windows at the IP packet level, so TCP and UDP
 * see the same link (or by veth + `tc netem` where the kernel has it).
 *
 * ```ts
 * await using link = await openLink(parseLinkSpec("wan"));
 * const server = link.exec("server", ["lab", "serve", "--host", link.serverAddr]);
 * ```
 *
 * @module
 */
export {
  type BlackholeSpec,
  configuredRttMs,
  DEFAULT_QUEUE,
  type DirectionSpec,
  formatLinkSpec,
  LINK_PROFILES,
  type LinkSpec,
  parseDuration,
  parseLinkSpec,
} from "./link_spec.ts";
export {
  type ExecOptions,
  type Link,
  type LinkBackend,
  type LinkSide,
  openLink,
  type OpenLinkOptions,
} from "./link.ts";
export { type DirectionCounters, type RelayStats } from "./relay.ts";
export { cleanupLinks, type CleanupOptions, type CleanupReport } from "./cleanup.ts";
export {
  type ProbePlan,
  runSelftest,
  type SelftestCheck,
  type SelftestOptions,
  type SelftestReport,
} from "./selftest.ts";
export { formatSelftestReport } from "./report.ts";
export { hasNetAdmin, requireNetAdmin } from "./_system.ts";
