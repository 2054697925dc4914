/**
 * Shards of one load plan: which share of it shard I of N runs, so that N
 * shards on N machines together give the plan.
 *
 * The rounding rule: an integer total T over N shards gives every shard
 * ⌊T / N⌋ and the first T mod N shards (indexes 0 … T mod N − 1) one more.
 * Connections and the measured request count are divided that way (each shard
 * needs at least one of each); an open-loop rate is divided evenly (a real
 * number); streams are per connection, so the total in flight
 * (connections × streams) is divided with the connections; threads are each
 * machine's own (capped by its connections); duration and warm-up are every
 * shard's whole.
 */
import type { LoadPlan } from "./plan.ts";

/** Which shard this is: `index` 0 … `count` − 1. */
export interface ShardId {
  index: number;
  count: number;
}

/** Most shards one plan is divided into. */
export const MAX_SHARDS = 10_000;

/** Parses `I/N` (I counted from 0); throws `RangeError` naming the text. */
export function parseShard(text: string): ShardId {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  if (!m) throw new RangeError(`A shard is I/N (I from 0), got "${text}"`);
  return checkShard(Number(m[1]), Number(m[2]));
}

function checkShard(index: number, count: number): ShardId {
  if (!Number.isInteger(count) || count < 1 || count > MAX_SHARDS) {
    throw new RangeError(`The shard count must be 1-${MAX_SHARDS}, got ${count}`);
  }
  if (!Number.isInteger(index) || index < 0 || index >= count) {
    throw new RangeError(`The shard index must be 0-${count - 1}, got ${index}`);
  }
  return { index, count };
}

/**
 * The shard Kubernetes names: `JOB_COMPLETION_INDEX` (an Indexed Job sets it
 * in every pod) with `count` (the Job's completions). Undefined when the index
 * is unset.
 */
export function shardFromIndexEnv(
  indexText: string | undefined,
  count: number,
): ShardId | undefined {
  if (indexText === undefined || indexText === "") return undefined;
  if (!/^\d+$/.test(indexText)) {
    throw new RangeError(`JOB_COMPLETION_INDEX must be an integer, got "${indexText}"`);
  }
  return checkShard(Number(indexText), count);
}

/** Shard `index`'s part of an integer `total` (the first `total mod count` shards take one more). */
export function shareOf(total: number, shard: ShardId): number {
  const base = Math.floor(total / shard.count);
  return base + (shard.index < total % shard.count ? 1 : 0);
}

/** The part of `plan` that `shard` runs; throws `RangeError` when a shard would get no connection or request. */
export function shardPlan(plan: LoadPlan, shard: ShardId): LoadPlan {
  const connections = plan.connections ?? 1;
  if (connections < shard.count) {
    throw new RangeError(
      `${shard.count} shards need at least ${shard.count} connections, got ${connections}`,
    );
  }
  if (plan.requests !== undefined && plan.requests < shard.count) {
    throw new RangeError(
      `${shard.count} shards need at least ${shard.count} requests, got ${plan.requests}`,
    );
  }
  const conns = shareOf(connections, shard);
  const out: LoadPlan = {
    ...plan,
    connections: conns,
    threads: Math.min(plan.threads ?? 1, conns),
  };
  if (plan.requests !== undefined) out.requests = shareOf(plan.requests, shard);
  if (plan.rate) out.rate = plan.rate / shard.count;
  return out;
}

/** `2/4` for shard index 2 of 4. */
export function shardLabel(shard: ShardId): string {
  return `${shard.index}/${shard.count}`;
}
