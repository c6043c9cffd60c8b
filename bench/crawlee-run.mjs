/**
 * Crawlee's CheerioCrawler on the benchmark corpus (run by bench/crawl.ts in
 * its own process): same start URLs, same-origin links only, in-memory
 * storage, no persistence. Prints {"pages": N} when done.
 */
import { CheerioCrawler, Configuration } from '@crawlee/cheerio';

const starts = process.argv.slice(2);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
let pages = 0;
const crawler = new CheerioCrawler(
  {
    maxConcurrency: concurrency,
    minConcurrency: concurrency,
    maxRequestRetries: 0,
    maxRequestsPerCrawl: 100_000,
    async requestHandler({ enqueueLinks }) {
      pages++;
      await enqueueLinks({ strategy: 'same-origin' });
    },
  },
  new Configuration({ persistStorage: false, purgeOnStart: true, logLevel: 0 }),
);
await crawler.run(starts);
process.stdout.write(`${JSON.stringify({ pages })}\n`);
