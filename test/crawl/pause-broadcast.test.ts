/**
 * A Retry-After met by one worker holds back the request another worker
 * took ahead of its slot (lease/pause-broadcast.ts): judged by the site.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kickoff } from '../../src/crawl/kickoff.js';
import { parsePause } from '../../src/crawl/lease/index.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { CrawlWorker } from '../../src/crawl/worker.js';
import { html, requestTimes, type Handler } from '../helpers/web.js';
import { useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('pause-broadcast');

const LATENCY_MS = 400;
const TRAPS = ['/p/2', '/p/4', '/p/6'];

describe('Retry-After across workers', () => {
  it("a 429 one worker meets stops the other's request held for the next slot; the site hears nothing during the pause", async () => {
    const written429: number[] = [];
    // Every page answers 400 ms late: at 2/s the domain's next slot (525 ms
    // after a write) is leased, up to 250 ms ahead, to the other worker (each
    // has one lane, the first busy with its request) before the 429 comes.
    const page: Handler = (req, res, { count }) => {
      const path = req.url ?? '/';
      setTimeout(() => {
        if (TRAPS.includes(path) && count === 1) {
          written429.push(performance.now());
          res.writeHead(429, { 'retry-after': '1', 'content-type': 'text/plain' });
          res.end('slow down');
          return;
        }
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(html(path === '/' ? Array.from({ length: 8 }, (_, i) => `<a href="/p/${i + 1}">${i + 1}</a>`).join(' ') : 'leaf'));
      }, LATENCY_MS);
    };
    const site = await world.web.site('R', { '/robots.txt': 'User-agent: *\nAllow: /\n' }, page);
    const seed = validateSeed({ arena: 'pausebroadcast', rateLimits: { [site.key]: 2 }, maxInFlightPerDomain: 2, start: [`${site.origin}/`], allowPrivateNetworks: true });
    await kickoff(world.redis, seed);
    await Promise.all([0, 1].map(() => new CrawlWorker(world.redis, seed, { concurrency: 1, exitWhenDone: true }).run()));
    const reqs = world.web.of('R');
    assert.equal(written429.length, 3, 'each trap answered 429 once');
    for (const path of ['/', ...Array.from({ length: 8 }, (_, i) => `/p/${i + 1}`)]) assert.ok(reqs.some((r) => r.path === path), `${path} fetched`);
    // A request written before its worker could hear of the 429 may arrive just after it; none later within the pause.
    for (const t of written429) {
      const inPause = reqs.filter((r) => r.at - r.lag > t + 30 && r.at < t + 950);
      assert.deepEqual(inPause.map((r) => r.path), [], `requests during the pause after the 429 written at ${Math.round(t - (reqs[0]?.at ?? 0))} ms: ${requestTimes(reqs, reqs[0]?.at ?? 0)}`);
    }
  });

  it('a message on the channel is read only as a pause of a named queue, bounded', () => {
    assert.deepEqual(parsePause('{"queue":"example.com","ms":1000}'), { queue: 'example.com', ms: 1000 });
    assert.deepEqual(parsePause('{"queue":"example.com","ms":1e12}'), { queue: 'example.com', ms: 3_600_000 });
    for (const bad of ['', 'not json', '{"queue":"","ms":5}', '{"queue":"a","ms":-1}', '{"queue":"a","ms":"5"}', '{"queue":5,"ms":5}', '{"queue":"a"}', `{"queue":"${'x'.repeat(5000)}","ms":5}`]) assert.equal(parsePause(bad), null, bad.slice(0, 40));
  });
});
