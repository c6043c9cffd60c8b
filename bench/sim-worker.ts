/**
 * One worker process of the simulated crawl (bench/frontier.ts): the
 * crawler's own worker, through its API, with every host name resolved to
 * 127.0.0.1 (the simulated web answers any name), stopped after
 * `seconds`. argv: redis URL, seed file, seconds.
 */
import { runWorker } from '../src/crawl/run.js';
import { guardedLookup } from '../src/crawl/fetch/index.js';
import { loadSeedFile } from '../src/crawl/seed/index.js';
import { connectRedis } from '../src/redis.js';

const [url, seedPath, seconds] = process.argv.slice(2) as [string, string, string];
const redis = await connectRedis(url);
const seed = await loadSeedFile(seedPath);
const stop = new AbortController();
setTimeout(() => stop.abort(), Number(seconds) * 1000);
const summary = await runWorker(redis, seed, {
  concurrency: 64,
  signal: stop.signal,
  lookup: guardedLookup(true, (_host, _options, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }])),
});
process.stdout.write(`${JSON.stringify(summary)}\n`);
redis.disconnect();
