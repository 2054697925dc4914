/**
 * The userspace TUN relay of a link: its command-line arguments for a spec,
 * the process with its JSON event lines, and the counters those lines carry.
 *
 * @module
 */
import type { LinkSpec } from "./link_spec.ts";

/** Counters of one direction of the relay. */
export interface DirectionCounters {
  /** Packets and bytes read from the sending side. */
  in: number;
  bytesIn: number;
  /** Packets and bytes written to the receiving side (duplicates included). */
  out: number;
  bytesOut: number;
  /** Packets dropped by random/burst loss, a full queue, a blackhole window,
   * a full relay buffer, or a failed write. */
  dropLoss: number;
  dropQueue: number;
  dropBlackhole: number;
  dropOverflow: number;
  dropWrite: number;
  /** Extra copies sent, packets sent early (reordered), packets still held. */
  duplicated: number;
  reordered: number;
  queued: number;
  /** How late packets left compared with their scheduled release, in ns. */
  lateMeanNs: number;
  lateMaxNs: number;
}

/** A relay counter snapshot. */
export interface RelayStats {
  /** Time since the relay started, in ns. */
  uptimeNs: number;
  /** Client → server. */
  up: DirectionCounters;
  /** Server → client. */
  down: DirectionCounters;
}

/** One direction's counters from the relay's JSON names. */
function toCounters(raw: Record<string, number>): DirectionCounters {
  return {
    in: raw.in,
    bytesIn: raw.bytes_in,
    out: raw.out,
    bytesOut: raw.bytes_out,
    dropLoss: raw.drop_loss,
    dropQueue: raw.drop_queue,
    dropBlackhole: raw.drop_blackhole,
    dropOverflow: raw.drop_overflow,
    dropWrite: raw.drop_write,
    duplicated: raw.duplicated,
    reordered: raw.reordered,
    queued: raw.queued,
    lateMeanNs: raw.late_mean_ns,
    lateMaxNs: raw.late_max_ns,
  };
}

/** The relay's command-line arguments for a spec (pure; exported for tests). */
export function relayArgs(spec: LinkSpec, seed: number): string[] {
  const args = ["--seed", String(seed)];
  for (const [name, d] of [["up", spec.up], ["down", spec.down]] as const) {
    const us = (ms: number) => String(Math.round(ms * 1000));
    args.push(
      `--${name}-delay-us`,
      us(d.delayMs),
      `--${name}-jitter-us`,
      us(d.jitterMs),
      `--${name}-loss`,
      String(d.loss),
      `--${name}-burst`,
      String(d.burst),
      `--${name}-rate-bps`,
      String(d.rateBps),
      `--${name}-queue`,
      String(d.queue),
      `--${name}-reorder`,
      String(d.reorder),
      `--${name}-dup`,
      String(d.dup),
    );
    if (spec.blackhole) {
      args.push(
        `--${name}-bh-on-us`,
        us(spec.blackhole.onMs),
        `--${name}-bh-off-us`,
        us(spec.blackhole.offMs),
      );
    }
  }
  return args;
}

/** Reads the relay's JSON lines and hands them to waiters. */
export class RelayProcess {
  readonly child: Deno.ChildProcess;
  readonly pid: number;
  #waiters: ((event: Record<string, unknown> | undefined) => void)[] = [];
  #unclaimed: Record<string, unknown>[] = [];
  #stderr = "";
  #exitStats: RelayStats | undefined;
  readonly done: Promise<void>;

  constructor(path: string, args: string[]) {
    this.child = new Deno.Command(path, {
      args,
      stdin: "piped", // the relay exits when our end of this pipe closes
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.pid = this.child.pid;
    this.done = Promise.all([this.#readLines(), this.#readStderr()]).then(() => {
      for (const w of this.#waiters.splice(0)) w(undefined);
    });
  }

  async #readLines(): Promise<void> {
    let buf = "";
    for await (const chunk of this.child.stdout.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let event: Record<string, unknown>;
        try {
          event = JSON.parse(line);
        } catch {
          continue;
        }
        if (event.event === "exit") this.#exitStats = RelayProcess.toStats(event);
        const waiter = this.#waiters.shift();
        if (waiter) waiter(event);
        else if (this.#unclaimed.length < 16) this.#unclaimed.push(event);
      }
    }
  }

  async #readStderr(): Promise<void> {
    for await (const chunk of this.child.stderr.pipeThrough(new TextDecoderStream())) {
      if (this.#stderr.length < 4096) this.#stderr += chunk;
    }
  }

  /** A counter snapshot from one of the relay's event lines. */
  static toStats(event: Record<string, unknown>): RelayStats {
    return {
      uptimeNs: event.uptime_ns as number,
      up: toCounters(event.up as Record<string, number>),
      down: toCounters(event.down as Record<string, number>),
    };
  }

  /** Forgets event lines nobody asked for yet. */
  discardUnclaimed(): void {
    this.#unclaimed.length = 0;
  }

  /** Next event line, or undefined if the relay ended or `ms` passed. */
  next(ms: number): Promise<Record<string, unknown> | undefined> {
    const early = this.#unclaimed.shift();
    if (early) return Promise.resolve(early);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        const i = this.#waiters.indexOf(settle);
        if (i >= 0) this.#waiters.splice(i, 1);
        resolve(undefined);
      }, ms);
      const settle = (e: Record<string, unknown> | undefined) => {
        clearTimeout(timer);
        resolve(e);
      };
      this.#waiters.push(settle);
    });
  }

  /** The last line the relay wrote to stderr. */
  get stderrLine(): string {
    return this.#stderr.trim().split("\n").at(-1) ?? "";
  }

  /** The counters of the relay's exit line, once it wrote one. */
  get exitStats(): RelayStats | undefined {
    return this.#exitStats;
  }
}
