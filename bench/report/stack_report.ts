/**
 * What each row ran on: the stack, the libraries, the negotiated TLS suite
 * and group, and the packet sizes. A pure function of a run record, shared
 * by the terminal table and the Markdown report.
 */
import type { ConnectionInfo } from "../../transports/types.ts";
import type { BenchRun } from "../record/schema.ts";

/** One transport's connection in words. */
export function describeConnection(info: ConnectionInfo): string {
  const parts = [info.implementation];
  if (info.tls) {
    const t = info.tls;
    const negotiated = [t.version, t.suite, t.group].filter(Boolean).join(" ");
    parts.push(
      `${t.library}${negotiated ? ` ${negotiated}` : " (suite and group not exposed)"}` +
        (t.resumed ? ", resumed" : ""),
    );
  }
  if (info.tcpMssBytes !== undefined) parts.push(`TCP MSS ${info.tcpMssBytes} B`);
  if (info.maxDatagramBytes !== undefined) {
    parts.push(`largest QUIC datagram ${info.maxDatagramBytes} B`);
  }
  return parts.join(" · ");
}

/** The stack line and one line per transport that reported its connection. */
export function stackLines(run: BenchRun): string[] {
  const stack = run.config.stack ?? "deno";
  const lines = [
    `stack ${stack}` + (run.config.stack ? "" : " (a run saved before stacks were recorded)"),
  ];
  const conns = run.connections ?? {};
  for (const t of run.config.transports) {
    const info = conns[t];
    if (info) lines.push(`  ${t}: ${describeConnection(info)}`);
  }
  if (run.config.link?.mtu !== undefined) {
    lines.push(
      `  MTU ${run.config.link.mtu} B on both ends of the ${run.config.link.backend} link`,
    );
  }
  return lines;
}
