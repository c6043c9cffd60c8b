/**
 * A crawl whose WARC directory fills up (issue 29, items 1 and 2), run as a
 * user runs it (`weir crawl`): an archive failure is the worker's fault, not
 * the site's. The worker stops with a clear error and a non-zero exit, no
 * URL is fetched again in a loop or dead-lettered, `status` says why, every
 * output line points at its record in files that read through; with space
 * again the same crawl finishes.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { CrawlStats } from '../../src/crawl/counters/index.js';
import { SMALL_FS_SKIP, useSmallFs } from '../helpers/small-fs.js';
import { readWarcFile } from '../helpers/warc-reader.js';
import { html } from '../helpers/web.js';
import { readJsonl, useCrawlWorld } from '../helpers/world.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const PAGES = 30;

const world = useCrawlWorld('archive-crawl', async (w) => {
  // Pages of ~120 kB that compress poorly: 30 of them do not fit in 2 MiB of archive.
  const bodies = Array.from({ length: PAGES }, () => html(randomBytes(90_000).toString('base64')));
  const links = Array.from({ length: PAGES }, (_, i) => `<a href="/p/${i}">${i}</a>`).join('');
  await w.web.site('F', { '/robots.txt': 'User-agent: *\nAllow: /\n', '/': html(links) }, (req, res) => {
    const i = Number(/^\/p\/(\d+)$/.exec(req.url ?? '')?.[1]);
    res.writeHead(Number.isInteger(i) && i < PAGES ? 200 : 404, { 'content-type': 'text/html' });
    res.end(bodies[i] ?? 'no');
  });
});

function weir(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli.ts'), ...args, '--redis', world.server.url, '--log-format', 'json'], {
    cwd: ROOT,
    env: { ...process.env, WEIR_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((r) => p.on('exit', (code) => r({ code, stdout, stderr })));
}

describe('a crawl whose archive disk fills', () => {
  const small = useSmallFs(2 * 1024 * 1024);

  it('stops the worker with a clear error and exit 1, fetches nothing again, loses nothing; with space the crawl finishes', async (t) => {
    const fs = small.get();
    if (!fs) return t.skip(SMALL_FS_SKIP);
    const F = world.web.sites.get('F');
    assert.ok(F);
    const seed = join(world.dir, 'full.yaml');
    await writeFile(seed, `arena: fulldisk\nrateLimits:\n  "${F.key}": unlimited\nstart:\n  - ${F.origin}/\nallowPrivateNetworks: true\n`);
    const warc = join(fs.dir, 'warc');
    const out1 = join(world.dir, 'full-1.jsonl');

    const first = await weir(['crawl', seed, '--workers', '1', '--concurrency', '2', '--warc', warc, '--out', out1]);
    assert.equal(first.code, 1, `exit 1 when the archive fails (stdout: ${first.stdout.slice(-300)})`);
    assert.match(first.stderr, /archiving failed: .*ENOSPC/, 'the log says what failed and why');

    const fetched = new Map<string, number>();
    for (const r of world.web.of('F')) fetched.set(r.path, (fetched.get(r.path) ?? 0) + 1);
    assert.ok(fetched.size > 5 && fetched.size < PAGES + 2, `stopped part way: ${fetched.size} URLs fetched`);
    assert.ok(Math.max(...fetched.values()) === 1, 'no URL fetched twice: nothing retried in a loop');

    const status = await weir(['status', seed, '--json']);
    const stats = JSON.parse(status.stdout) as CrawlStats;
    assert.equal(stats.totals.dead, 0, 'nothing dead-lettered');
    assert.equal(stats.faults[0]?.code, 'WEIR_WARC', 'status names the fault');
    assert.match(stats.faults[0]?.message ?? '', /ENOSPC/);

    // Every URL committed has its record, where its line says, in files that read through.
    const lines = await readJsonl(out1);
    assert.ok(lines.length > 0);
    const files = new Map<string, Awaited<ReturnType<typeof readWarcFile>>>();
    for (const f of await readdir(warc)) if (f.endsWith('.warc.gz')) files.set(f, await readWarcFile(join(warc, f)));
    for (const [f, read] of files) assert.equal(read.tornAt, null, `${f} reads through`);
    for (const l of lines) {
      assert.ok(l.warc, `${l.url} committed with its record`);
      const rec = files.get(l.warc.file)?.records.find((r) => r.offset === l.warc?.offset);
      assert.equal(rec?.header('WARC-Target-URI'), l.url, `${l.url}: its record is at ${l.warc.file}:${l.warc.offset}`);
    }

    // Space again (another directory): the same crawl resumes and finishes; no URL fetched more than twice.
    const second = await weir(['crawl', seed, '--workers', '1', '--concurrency', '2', '--warc', join(world.dir, 'warc-2'), '--out', join(world.dir, 'full-2.jsonl')]);
    assert.equal(second.code, 0, second.stderr.slice(-500));
    const after = JSON.parse((await weir(['status', seed, '--json'])).stdout) as CrawlStats;
    assert.equal(after.totals.pages, PAGES + 1);
    assert.equal(after.totals.dead, 0);
    const counts = new Map<string, number>();
    for (const r of world.web.of('F')) counts.set(r.path, (counts.get(r.path) ?? 0) + 1);
    assert.equal(counts.size, PAGES + 2, 'robots.txt, / and every page');
    assert.ok(Math.max(...counts.values()) <= 2, 'at most the fetch whose record failed, and one more');
  });
});
