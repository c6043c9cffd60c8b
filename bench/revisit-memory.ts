/**
 * What a URL kept for revisits costs Redis (BENCH_PART=revisit of npm run
 * bench:queue): BENCH_REVISIT_URLS URLs (default 1,000,000) over 1,000
 * domains, each queue item as the crawler writes it after a visit (a
 * 62-byte URL, its referrer, and its visit record: ETag, Last-Modified,
 * digest, times, counts), first queued, then each leased and revisited an
 * hour out, so every URL waits among the delayed items with its record.
 * Redis's used_memory delta per URL in both states, and what 10^8 URLs
 * would need at that rate.
 */
import type { Redis } from 'ioredis';
import { usedMemory } from './redis-usage.js';
import type { FairQueue } from '../src/queue/index.js';
import { encodeItem, queuedUrl } from '../src/crawl/store/index.js';

type Out = (name: string, value: string, note?: string) => void;

const DOMAINS = 1000;

/** A visited page's item: URL, referrer, depth and a visit record with both validators. */
export function visitedItem(i: number): string {
  const host = `www.site-${String(i % DOMAINS).padStart(4, '0')}.example`;
  const url = `https://${host}/articles/2026/${String(i).padStart(8, '0')}.html`;
  return encodeItem(
    queuedUrl(url, {
      depth: 3,
      referrer: `https://${host}/articles/2026/`,
      visit: { at: 1_764_745_000_000 + i, status: 200, etag: `"${(i * 2654435761).toString(16).slice(0, 8)}-5f3a1c2b"`, lastModified: 'Wed, 02 Dec 2026 10:00:00 GMT', digest: 'q8Xq0dJ6xqJmHn1hYl2QkX7bQ4c', capturedAt: 1_764_745_000_000 + i, intervalS: 86_400, visits: 3, changes: 1, gone: 0, warcDigest: null },
    }),
  );
}

export async function revisitMemoryBenchmarks(redis: Redis, q: FairQueue, out: Out): Promise<void> {
  const n = Number(process.env.BENCH_REVISIT_URLS ?? 1_000_000);
  const arena = 'revisitmem';
  await q.setLimits(arena, Object.fromEntries(Array.from({ length: DOMAINS }, (_, d) => [`d${d}`, { rate: 'unlimited' as const }])));
  const itemBytes = visitedItem(123_456).length;
  const before = await usedMemory(redis);
  const t0 = performance.now();
  for (let i = 0; i < n; i += DOMAINS * 10) {
    const calls: Promise<number>[] = [];
    for (let d = 0; d < DOMAINS; d++) {
      const items: string[] = [];
      for (let k = i + d; k < Math.min(n, i + DOMAINS * 10); k += DOMAINS) items.push(visitedItem(k));
      if (items.length > 0) calls.push(q.enqueue(arena, `d${d}`, items));
    }
    await Promise.all(calls);
  }
  const queued = (await usedMemory(redis)) - before;
  // Each leased and revisited an hour out: every URL then waits with its record among the delayed items.
  let left = n;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (left > 0) {
        left--;
        const r = await q.dequeue(arena, { leaseMs: 600_000 });
        if (!r.lease) break;
        await q.revisit(r.lease, { delayMs: 3_600_000 });
      }
    }),
  );
  const s = await q.stats(arena);
  const waiting = (await usedMemory(redis)) - before;
  const secs = (performance.now() - t0) / 1000;
  out(`revisits: URLs kept (${n.toLocaleString('en-US')} over ${DOMAINS} domains)`, `${s.delayed.toLocaleString('en-US')} waiting`, `one item ${itemBytes} bytes (URL, referrer, record); ${secs.toFixed(0)} s to queue, lease and revisit them all`);
  out('revisits: Redis memory per URL queued with its record (bytes)', (queued / n).toFixed(0), 'used_memory delta: packed into its queue\'s chunks');
  out('revisits: Redis memory per URL waiting for its next visit (bytes)', (waiting / n).toFixed(0), `delayed: a sorted-set entry and a hash field each; 10^8 URLs: ${((waiting / n) * 1e8 / 2 ** 30).toFixed(1)} GiB`);
  await q.destroy(arena);
}
