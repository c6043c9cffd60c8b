/**
 * Arena-wide figures from an arena's shards (src/queue/shards.ts): totals
 * summed, per-queue pages walked shard after shard, the dead letter read as
 * one list. With one shard each is that shard's own answer, unchanged.
 */
import type { ArenaStats, DeadItem } from './types.js';

/**
 * A per-queue stats cursor names its shard and the queue id to start from
 * in it: shard × 2^32 + qid (qids start at 1), so an arena of one shard
 * keeps the plain qid cursor it always had.
 */
const SHARD_CURSOR = 2 ** 32;

export function splitCursor(cursor: number): { shard: number; qid: number } {
  return { shard: Math.floor(cursor / SHARD_CURSOR), qid: Math.max(1, cursor % SHARD_CURSOR) };
}

/** The cursor after a page of shard `shard` whose own next cursor was `next`; null after the last shard's last page. */
export function nextCursor(shard: number, shards: number, next: number | null): number | null {
  if (next !== null) return shard * SHARD_CURSOR + next;
  return shard + 1 < shards ? (shard + 1) * SHARD_CURSOR + 1 : null;
}

/** One arena's totals from its shards' (the arena is held when every shard is). */
export function sumArenaStats(parts: readonly ArenaStats[]): ArenaStats {
  const [first, ...rest] = parts;
  if (!first) throw new Error('an arena has at least one shard');
  const sum = { ...first, dedupe: first.dedupe && { ...first.dedupe } };
  for (const p of rest) {
    sum.queued += p.queued;
    sum.leased += p.leased;
    sum.delayed += p.delayed;
    sum.done += p.done;
    sum.dead += p.dead;
    sum.enqueued += p.enqueued;
    sum.queues += p.queues;
    sum.expired += p.expired;
    sum.held &&= p.held;
    sum.exists ||= p.exists;
    sum.now = Math.max(sum.now, p.now);
    if (sum.dedupe && p.dedupe) sum.dedupe.bits += p.dedupe.bits;
  }
  sum.drained = sum.queued + sum.leased + sum.delayed === 0;
  return sum;
}

/**
 * A page of the dead letter over the shards' lists taken as one, shard 0's
 * first (each oldest first): `lengths` are the lists' lengths, `read` reads
 * `count` items from `offset` of one shard's.
 */
export async function deadAcross(
  lengths: readonly number[],
  offset: number,
  count: number,
  read: (shard: number, offset: number, count: number) => Promise<DeadItem[]>,
): Promise<DeadItem[]> {
  const out: DeadItem[] = [];
  let skip = offset;
  for (let s = 0; s < lengths.length && out.length < count; s++) {
    const len = lengths[s] ?? 0;
    if (skip >= len) {
      skip -= len;
      continue;
    }
    out.push(...(await read(s, skip, Math.min(count - out.length, len - skip))));
    skip = 0;
  }
  return out;
}

/**
 * Shards' busiest queues in one order: by backlog, most queued first; by
 * waiting, eligible longest first; ties by name (as lua/stats.lua cuts each
 * shard's, so consecutive pages neither repeat nor skip a queue). In place.
 */
export function sortByRank<T extends { name: string }>(rows: T[], by: 'backlog' | 'waiting', key: (row: T) => number): T[] {
  const sign = by === 'backlog' ? -1 : 1;
  return rows.sort((a, b) => sign * (key(a) - key(b)) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Whether no queue a shard's index left out could rank above the last row
 * shown (`least` queued): each such shard told a bound its left-out queues
 * are below (lua/stats.lua's exact).
 */
export function leftOutSmaller(parts: readonly { exact: number }[], least: number): boolean {
  return parts.every((p) => p.exact === 0 || least >= p.exact - 1);
}
