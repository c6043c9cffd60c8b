/**
 * Runs one CrawlWorker in its own process (for the fault tests, so its peak
 * RSS is its own; for a judging site in the test process, so the crawl's CPU
 * does not delay the site's stamps): argv[2] is a JSON {redisUrl, seed,
 * concurrency, retryBaseMs, out, warc, hosts}; `hosts` maps host names to
 * the loopback address each resolves to (test/helpers/host-web.ts).
 * Prints one JSON line: the summary and peak RSS in bytes.
 */
import { Redis } from 'ioredis';
import { JsonlWriter } from '../../src/crawl/output/jsonl.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { CrawlWorker } from '../../src/crawl/worker.js';
import { guardedLookup, type LookupFunction } from '../../src/crawl/fetch/index.js';

const cfg = JSON.parse(process.argv[2] ?? '{}') as { redisUrl: string; seed: Record<string, unknown>; concurrency: number; retryBaseMs?: number; out: string; clockSkewMs?: number; warc?: { dir: string }; hosts?: Record<string, string> };
const hosts = cfg.hosts;
const lookup: LookupFunction | undefined =
  hosts &&
  guardedLookup(true, (hostname, _options, cb) => {
    const address = hosts[hostname.toLowerCase()];
    if (address) cb(null, [{ address, family: 4 }]);
    else cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
  });
if (cfg.clockSkewMs) {
  // This process's wall clock runs off by clockSkewMs (the clock-skew test).
  const realNow = Date.now.bind(Date);
  Date.now = () => realNow() + (cfg.clockSkewMs ?? 0);
}
const redis = new Redis(cfg.redisUrl, { maxRetriesPerRequest: null });
const out = new JsonlWriter(cfg.out);
const summary = await new CrawlWorker(redis, validateSeed(cfg.seed), { concurrency: cfg.concurrency, exitWhenDone: true, out, robotsRetryBaseMs: 50, ...(lookup ? { lookup } : {}), ...(cfg.warc ? { warc: cfg.warc } : {}), ...(cfg.retryBaseMs !== undefined ? { retryBaseMs: cfg.retryBaseMs } : {}) }).run();
await out.close();
redis.disconnect();
process.stdout.write(`${JSON.stringify({ summary, peakRss: process.resourceUsage().maxRSS * 1024 })}\n`);
