/**
 * Operator tools on an arena too big to read whole (25,000 domains here):
 * `weir status`, the status page's source and the metrics show totals and a
 * top-N of domains (by backlog, by waiting, by errors) or those named,
 * without reading every queue or the whole counter hash.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { crawlStats, loadMetrics } from '../../src/crawl/counters/index.js';
import { Tally } from '../../src/crawl/counters/tally.js';
import { crawlKeys } from '../../src/crawl/store/keys.js';
import { kickoff } from '../../src/crawl/kickoff.js';
import { validateSeed } from '../../src/crawl/seed/index.js';
import { FairQueue } from '../../src/queue/index.js';
import { StatusSource } from '../../src/status/source.js';
import { parseViewQuery } from '../../src/status/view.js';
import { cliBundle } from '../helpers/cli-bundle.js';
import { useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('bigarena');
const ARENA = 'bigarena-20k';
const DOMAINS = 25_000;
const name = (i: number): string => `d${i}.test`;

/** 25,000 listed domains; d0-d39 with 400 - 5i URLs each, 5,000 more with one; errors on three. */
async function bigArena(): Promise<FairQueue> {
  const file = join(world.dir, 'big.csv');
  await writeFile(file, Array.from({ length: DOMAINS }, (_, i) => `${name(i)},1`).join('\n'));
  const seedPath = join(world.dir, 'big.yaml');
  await writeFile(seedPath, `arena: ${ARENA}\ndomainFiles: [big.csv]\nstart: ["http://${name(0)}/"]\n`);
  const seed = validateSeed({ arena: ARENA, domainFiles: [file], start: [`http://${name(0)}/`] });
  // Twice: the first, into a new arena, makes the queue of d0 (its start URL)
  // only, leaving the others to their first URLs; the second finds queues
  // and makes every listed domain's, as a crawl that has reached them all has.
  await kickoff(world.redis, seed);
  await kickoff(world.redis, seed);
  const queue = new FairQueue(world.redis);
  for (let i = 0; i < 40; i++) await queue.enqueue(ARENA, name(i), Array.from({ length: 400 - 5 * i }, (_, j) => `{"u":"http://${name(i)}/${j}"}`));
  await Promise.all(Array.from({ length: 5000 }, (_, k) => queue.enqueue(ARENA, name(100 + k), [`{"u":"http://${name(100 + k)}/"}`])));
  await queue.enqueue(ARENA, name(5100), ['{"u":"x"}']);
  const tally = new Tally();
  tally.add(name(7000), 'errors', 30);
  tally.add(name(7001), '4xx', 50);
  tally.add(name(3), 'errors', 10);
  tally.add(name(3), 'pages', 4);
  await tally.flush(world.redis, crawlKeys(ARENA, queue).stats, crawlKeys(ARENA, queue).errorDomains);
  return queue;
}

describe('a big arena', () => {
  it('status, the page and the metrics answer with totals and a top-N, never a row per domain', async () => {
    const queue = await bigArena();
    const s = await crawlStats(world.redis, ARENA, queue);
    assert.equal(s.domainCount, DOMAINS);
    assert.equal(s.shown.by, 'backlog');
    assert.equal(s.domains.length, 50);
    assert.deepEqual(s.domains.slice(0, 40).map((d) => d.domain), Array.from({ length: 40 }, (_, i) => name(i)));
    assert.ok(s.domains.slice(40).every((d) => d.queued === 1));
    // (Rows 41-50 come from the index's lowest bucket, read in part: a queue of up to 15 could have been left out.)
    assert.equal(s.shown.exact, false);
    assert.deepEqual((await crawlStats(world.redis, ARENA, queue, { count: 40 })).shown, { by: 'backlog', exact: true, offset: 0 });
    assert.equal(s.totals.queued, 400 * 40 - 5 * (39 * 40) / 2 + 5001 + 1, 'with the start URL kickoff queued');
    assert.equal(s.totals.errors, 90);
    assert.deepEqual([s.domains[3]?.pages, s.domains[3]?.failed], [4, 10], 'a row carries its own counters');

    const errors = await crawlStats(world.redis, ARENA, queue, { by: 'errors', count: 5 });
    assert.deepEqual(errors.domains.map((d) => [d.domain, d.failed]), [[name(7001), 50], [name(7000), 30], [name(3), 10]]);
    const named = await crawlStats(world.redis, ARENA, queue, { domains: [name(12_345), 'nowhere.test'] });
    assert.deepEqual(named.domains.map((d) => [d.domain, d.queued]), [[name(12_345), 0]]);

    // The page: the biggest backlogs; a search finds a small domain by its name.
    const source = new StatusSource(world.redis, queue, ARENA, 'redis://test');
    const top = await source.view(parseViewQuery(new URLSearchParams('sort=queued')));
    assert.equal(top.totals.domains, DOMAINS);
    assert.match(top.shownNote ?? '', /the 200 of 25,000 domains with the most URLs queued/);
    assert.equal(top.rows[0]?.domain, name(0));
    // Sorted by URLs queued, the table pages on past the snapshot's 200 rows, by rank: no domain twice, none but those with URLs queued.
    const pageOf = async (page: number): Promise<{ matched: number; rows: string[] }> => {
      const v = await source.view(parseViewQuery(new URLSearchParams(`sort=queued&size=25&page=${page}`)));
      assert.ok(v.rows.every((r) => r.queued >= 1), `page ${page}: rows with URLs queued`);
      return { matched: v.matched, rows: v.rows.map((r) => r.domain) };
    };
    const [p7, p8, p9] = [await pageOf(7), await pageOf(8), await pageOf(9)];
    assert.deepEqual([p7.rows.length, p8.rows.length, p9.rows.length], [25, 25, 25]);
    assert.equal(new Set([...p7.rows, ...p8.rows, ...p9.rows]).size, 75, 'three pages, 75 domains');
    assert.equal(p8.matched, 10_000, 'pages go on to the 10,000th');
    const found = await source.view(parseViewQuery(new URLSearchParams(`q=${name(5100)}`)));
    assert.deepEqual(found.rows.map((r) => [r.domain, r.queued]), [[name(5100), 1]]);

    // Metrics: 500 series per gauge at most, the biggest first among them.
    const { CrawlMetrics } = await loadMetrics();
    const metrics = new CrawlMetrics(queue, ARENA);
    const text = await metrics.registry.metrics();
    const series = text.split('\n').filter((l) => l.startsWith('weir_domain_queued{'));
    assert.equal(series.length, 500);
    assert.ok(series.some((l) => l.startsWith(`weir_domain_queued{domain="${name(0)}"} 401`)));
    // An operator's own list beside a smaller top-N: each domain once, whatever its backlog; no series for a domain with no queue.
    const queuedSeries = async (domains: { top?: number; named?: string[] }): Promise<string[]> =>
      (await new CrawlMetrics(queue, ARENA, { domains }).registry.metrics()).split('\n').filter((l) => l.startsWith('weir_domain_queued{')).map((l) => l.replace(/^weir_domain_queued\{domain="([^"]+)"\} /, '$1 '));
    assert.deepEqual(await queuedSeries({ top: 2, named: [name(12_345), name(1), 'nowhere.test', name(5100)] }), [`${name(0)} 401`, `${name(1)} 395`, `${name(12_345)} 0`, `${name(5100)} 1`]);
    assert.deepEqual(await queuedSeries({ top: 0, named: [name(2)] }), [`${name(2)} 390`]);
    assert.throws(() => new CrawlMetrics(queue, ARENA, { domains: { top: 501 } }), /top domains must be a whole number from 0 to 500/);

    // The command: the top N and which they are; by errors; by name.
    const run = (...args: string[]): string => {
      const r = spawnSync(process.execPath, [cliBundle(), 'status', join(world.dir, 'big.yaml'), '--redis', world.server.url, ...args], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      return r.stdout;
    };
    const table = run('--top', '5');
    assert.match(table, /the 5 of 25,000 domains with the most URLs queued/);
    assert.equal(table.split('\n').filter((l) => /^d\d+\.test /.test(l)).length, 5);
    assert.match(run('--by', 'errors', '--top', '2'), /the 2 of 25,000 domains with the most failed URLs[\s\S]*d7001\.test/);
    // A page further down each order.
    const further = run('--top', '5', '--offset', '5');
    assert.match(further, /the 5 of 25,000 domains with the most URLs queued, after the first 5/);
    assert.deepEqual(further.split('\n').filter((l) => /^d\d+\.test /.test(l)).map((l) => l.split(' ')[0]), [5, 6, 7, 8, 9].map(name));
    assert.deepEqual((await crawlStats(world.redis, ARENA, queue, { by: 'errors', count: 2, offset: 1 })).domains.map((d) => d.domain), [name(7000), name(3)]);
    const json = JSON.parse(run('--json', '--domain', name(3), '--domain', name(4))) as { domainCount: number; domains: { domain: string }[] };
    assert.deepEqual([json.domainCount, json.domains.map((d) => d.domain).sort()], [DOMAINS, [name(3), name(4)]]);
    const refused = (command: string, ...args: string[]): string => {
      const r = spawnSync(process.execPath, [cliBundle(), command, join(world.dir, 'big.yaml'), '--redis', world.server.url, ...args], { encoding: 'utf8' });
      assert.equal(r.status, 2, r.stderr);
      return r.stderr;
    };
    assert.match(refused('status', '--by', 'size'), /--by must be backlog, waiting or errors/);
    assert.match(refused('status', '--offset', '9990', '--top', '50'), /--offset: pages end within the first 10,000 rows/);
    assert.match(refused('status', '--offset=1.5'), /--offset must be a whole number ≥ 0/);
    assert.match(refused('status', '--domain', name(3), '--offset', '5'), /not with --top, --offset or --by/);
    assert.match(refused('worker', '--metrics-top', '5'), /--metrics-host, --metrics-top and --metrics-domain need --metrics-port P/);
    assert.match(refused('worker', '--metrics-port', '0', '--metrics-top', '501'), /--metrics-top must be a whole number from 0 to 500, got 501/);
    assert.match(refused('worker', '--metrics-port', '0', '--metrics-domain', ' , '), /--metrics-domain needs a domain/);
    assert.match(refused('worker', '--metrics-port', '0', '--metrics-domain', Array.from({ length: 501 }, (_, i) => name(i)).join(',')), /--metrics-domain: at most 500 domains/);
    await queue.close();
  });
});
