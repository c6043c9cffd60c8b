/**
 * Start URLs from files (seed startFiles): read as they stream (gzip
 * allowed), bad lines named by file and line, a file with too many refused
 * before anything is written, a second kickoff finding nothing new, an
 * interrupted one completed by running it again.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { kickoff } from '../../src/crawl/kickoff.js';
import { loadSeedFile, validateSeed } from '../../src/crawl/seed/index.js';
import { FairQueue } from '../../src/queue/index.js';
import { cliBundle } from '../helpers/cli-bundle.js';
import { useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('startfiles');
const DOMAINS = ['a.test', 'b.test', 'c.test', 'd.test', 'e.test'];
const urlOf = (i: number): string => `http://${DOMAINS[i % DOMAINS.length]}/p/${i}`;
const rateLimits = Object.fromEntries(DOMAINS.map((d) => [d, 10]));

describe('start files', () => {
  it('a gzipped file of 20,000 URLs with comments and 3 bad lines: all good ones queued once, the bad ones named by line; a second kickoff finds nothing new', async () => {
    const lines = ['# start URLs', ''];
    for (let i = 0; i < 20_000; i++) lines.push(urlOf(i));
    lines.splice(5000, 0, 'not a url');
    lines.splice(9000, 0, 'http://elsewhere.test/x');
    lines.splice(12_000, 0, `http://a.test/${'x'.repeat(9000)}`);
    const file = join(world.dir, 'start.txt.gz');
    await writeFile(file, gzipSync(lines.join('\n')));
    const seed = validateSeed({ arena: 'startfiles', rateLimits, startFiles: [file] });
    const r = await kickoff(world.redis, seed);
    assert.deepEqual([r.enqueued, r.files.urls, r.files.enqueued, r.files.bad], [0, 20_000, 20_000, 3]);
    assert.deepEqual(r.files.examples.map((e) => e.replace(`${file}:`, '').split(':')[0]), ['5001', '9001', '12001']);
    assert.match(r.files.examples[1] ?? '', /elsewhere\.test\/x is not inside any domain of rateLimits/);
    const stats = await new FairQueue(world.redis).stats('startfiles');
    assert.equal(stats.queued, 20_000);
    const again = await kickoff(world.redis, seed);
    assert.equal(again.files.enqueued, 0, 'nothing new the second time');
    assert.equal((await new FairQueue(world.redis).stats('startfiles')).queued, 20_000);
  });

  it('a file with too many bad lines is refused, naming its first bad lines, before anything is written', async () => {
    const file = join(world.dir, 'bad.txt');
    await writeFile(file, Array.from({ length: 100 }, (_, i) => (i % 5 === 0 ? `ftp://a.test/${i}` : urlOf(i))).join('\n'));
    const seed = validateSeed({ arena: 'startfiles-bad', rateLimits, startFiles: [file] });
    await assert.rejects(kickoff(world.redis, seed), (e: Error & { code?: string; field?: string }) => {
      assert.equal(e.code, 'WEIR_SEED');
      assert.equal(e.field, 'startFiles');
      assert.match(e.message, /20 of 100 lines are not start URLs \(at most 10 may be\), nothing was queued/);
      assert.match(e.message, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:1: not an absolute http\\(s\\) URL`));
      return true;
    });
    assert.deepEqual(await world.redis.keys('*startfiles-bad*'), [], 'nothing written');
    await assert.rejects(kickoff(world.redis, validateSeed({ arena: 'startfiles-none', rateLimits, startFiles: [join(world.dir, 'missing.txt')] })), /startFiles: cannot read .*missing\.txt: ENOENT/);
  });

  it('a seed names its files from its own folder; start may then be left out; a kickoff killed midway, run again, completes', async () => {
    const n = 200_000;
    await writeFile(join(world.dir, 'many.txt'), Array.from({ length: n }, (_, i) => urlOf(i)).join('\n'));
    const seedPath = join(world.dir, 'many.yaml');
    await writeFile(seedPath, `arena: startfiles-many\nrateLimits: ${JSON.stringify(rateLimits)}\nstartFiles: [many.txt]\n`);
    const seed = await loadSeedFile(seedPath);
    assert.deepEqual([seed.start, seed.startFiles], [[], [join(world.dir, 'many.txt')]]);
    const queue = new FairQueue(world.redis);
    // Killed once some of it is queued.
    const child = spawn(process.execPath, [cliBundle(), 'kickoff', seedPath, '--redis', world.server.url], { stdio: 'ignore' });
    let queued = 0;
    while (queued < 20_000) {
      await new Promise((r) => setTimeout(r, 20));
      queued = (await queue.stats('startfiles-many')).queued;
      assert.equal(child.exitCode, null, `kickoff finished before it could be interrupted (${queued} queued)`);
    }
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    // (Calls the kickoff wrote before it died, up to two batches', are still carried out: the count settles first.)
    let cut = -1;
    for (let now = (await queue.stats('startfiles-many')).queued; now !== cut; now = (await queue.stats('startfiles-many')).queued) {
      cut = now;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(cut < n, `interrupted at ${cut}`);
    const out = await new Promise<string>((resolve, reject) => {
      const p = spawn(process.execPath, [cliBundle(), 'kickoff', seedPath, '--redis', world.server.url], { stdio: ['ignore', 'pipe', 'ignore'] });
      let text = '';
      p.stdout.on('data', (d: Buffer) => (text += d.toString()));
      p.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`exit ${code}`))));
    });
    assert.match(out, new RegExp(`${n - cut} start URLs enqueued \\(${cut} already seen\\) \\(${n} from 1 start file\\)`));
    assert.equal((await queue.stats('startfiles-many')).queued, n, 'every URL once');
    await queue.close();
  });
});
