/**
 * A read of the dedupe bitmap in front of an enqueue call, for arenas whose
 * enqueues drop many items as seen (a crawl: the links every page of a site
 * repeats reach Redis once per worker). An item whose bits are all set
 * already would be dropped by the enqueue script too, since bits are only
 * ever set, so it is dropped here without being sent: the script still
 * decides, atomically, for every item that goes. A link the script drops
 * still costs it its bit positions as arguments, as Redis objects for
 * BITFIELD SET and a reply parsed back into Lua; the read is one GETRANGE
 * an item for the bytes that hold its bits (a blocked filter puts them in
 * 64), all in one pipeline, a small fraction of that (the counts:
 * docs/benchmarks.md, "Figures behind choices in the code"). It is made
 * only when a batch is expected to hold enough seen items (below), by the
 * recent share measured from the batches' own results, so all-new items
 * (a kickoff's seeds) do not pay for it.
 *
 * Only for an arena of one shard, whose bit positions are the bitmap's own
 * (a shard holding a part of a bitmap maps them by its size, which this
 * would have to read), and only items whose bits lie within 64 bytes.
 */
import type { EnqueueRequest } from './enqueue-batch.js';
import type { QueueClientCounters } from './types.js';

/**
 * The read goes first when a batch is expected to hold at least this many
 * seen items (its size times the recent share seen). In instructions a read
 * pays for itself at a small share seen, but it is a round trip of its own,
 * and a round trip costs Redis's kernel side (sockets, a wake-up) about
 * what one or two dropped links cost its scripts: so two (the crawl
 * bench's batches on either side of it: docs/benchmarks.md).
 */
const MIN_SEEN_PER_READ = 2;
/** Weight of one call's share in the running share. */
const SMOOTHING = 0.2;
/** The widest range of bytes read for one item: a blocked filter's block. */
const MAX_READ_BYTES = 64;

/** A Redis client, as far as the read needs one (ioredis's Redis and Cluster). */
export interface RangeReader {
  pipeline(): { getrangeBuffer(key: string, start: number, end: number): unknown; exec(): Promise<[Error | null, unknown][] | null> };
}

export class SeenCheck {
  /** Per shard (its hash tag): the running share of dedupe items dropped as seen. */
  private readonly dropped = new Map<string, number>();

  constructor(private readonly counters: QueueClientCounters) {}

  /**
   * A batch for one shard, with its items already seen left out when a read
   * is worth it (each request in its place, its items in order). A read
   * refused, say for a position past any bitmap, leaves the batch whole: the
   * script then names what is wrong.
   */
  async leaveOutSeen(reader: RangeReader, key: string, tag: string, shards: number, reqs: readonly EnqueueRequest[]): Promise<readonly EnqueueRequest[]> {
    const items = reqs.reduce((n, r) => n + r.items.length, 0);
    if (shards !== 1 || (this.dropped.get(tag) ?? 0) * items < MIN_SEEN_PER_READ) return reqs;
    const seen = await this.seen(reader, key, reqs.flatMap((r) => r.dedupe ?? [])).catch(() => null);
    if (!seen) return reqs;
    let at = 0;
    return reqs.map((r) => {
      const keep = r.items.map(() => !seen[at++]);
      return { ...r, items: r.items.filter((_, j) => keep[j]), dedupe: r.dedupe?.filter((_, j) => keep[j]) };
    });
  }

  /** A batch's result: of its requests' items, `added[i]` of request i's were enqueued; the rest were dropped as seen (by the read or the script). */
  note(tag: string, reqs: readonly EnqueueRequest[], added: readonly number[]): void {
    const items = reqs.reduce((n, r) => n + r.items.length, 0);
    if (items === 0) return;
    const seen = items - added.reduce((n, a) => n + a, 0);
    const before = this.dropped.get(tag) ?? 0;
    this.dropped.set(tag, before + SMOOTHING * (seen / items - before));
  }

  /**
   * For each item, whether all its bits are set in the bitmap at `key`:
   * the bytes that hold them read with one GETRANGE an item, all in one
   * pipeline (a blocked filter's bits lie in 64 bytes; an item whose bits
   * spread wider is not read, and counts as not seen).
   */
  private async seen(reader: RangeReader, key: string, positions: readonly (readonly number[])[]): Promise<boolean[]> {
    const pipe = reader.pipeline();
    const spans = positions.map((ps) => {
      if (ps.length === 0) return null;
      const from = Math.floor(Math.min(...ps) / 8);
      const to = Math.floor(Math.max(...ps) / 8);
      if (to - from >= MAX_READ_BYTES) return null;
      pipe.getrangeBuffer(key, from, to);
      return from;
    });
    if (spans.every((from) => from === null)) return positions.map(() => false);
    const replies = (await pipe.exec()) ?? [];
    this.counters.seenReads++;
    let r = 0;
    return positions.map((ps, i) => {
      const from = spans[i];
      if (from === null || from === undefined) return false;
      const [err, bytes] = replies[r++] ?? [new Error('no reply'), null];
      if (err || !Buffer.isBuffer(bytes)) return false;
      const all = ps.every((p) => ((bytes[Math.floor(p / 8) - from] ?? 0) & (128 >> p % 8)) !== 0);
      if (all) this.counters.seenSkipped++;
      return all;
    });
  }
}
