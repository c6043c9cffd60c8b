/**
 * Runs one CrawlWorker in its own process for the fault tests, so its peak
 * RSS is its own: argv[2] is a JSON {redisUrl, seed, concurrency, retryBaseMs, out, warc}.
 * Prints one JSON line: the summary and peak RSS in bytes.
 */
import { Redis } from 'ioredis';
import { JsonlWriter } from '../../src/crawl/output/jsonl.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { CrawlWorker } from '../../src/crawl/worker.js';

const cfg = JSON.parse(process.argv[2] ?? '{}') as { redisUrl: string; seed: Record<string, unknown>; concurrency: number; retryBaseMs?: number; out: string; clockSkewMs?: number; warc?: { dir: string } };
if (cfg.clockSkewMs) {
  // This process's wall clock runs off by clockSkewMs (the clock-skew test).
  const realNow = Date.now.bind(Date);
  Date.now = () => realNow() + (cfg.clockSkewMs ?? 0);
}
const redis = new Redis(cfg.redisUrl, { maxRetriesPerRequest: null });
const out = new JsonlWriter(cfg.out);
const summary = await new CrawlWorker(redis, validateSeed(cfg.seed), { concurrency: cfg.concurrency, exitWhenDone: true, out, robotsRetryBaseMs: 50, ...(cfg.warc ? { warc: cfg.warc } : {}), ...(cfg.retryBaseMs !== undefined ? { retryBaseMs: cfg.retryBaseMs } : {}) }).run();
await out.close();
redis.disconnect();
process.stdout.write(`${JSON.stringify({ summary, peakRss: process.resourceUsage().maxRSS * 1024 })}\n`);
