/**
 * WARC output: a crawl's exchanges read back with a reader written from the
 * standard (test/helpers/warc-reader.ts, not warcio), checked against the
 * bytes the fixture server sent.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import type { ServerResponse } from 'node:http';
import { runCrawl } from '../../src/crawl/run.js';
import { validateSeed } from '../../src/crawl/seed/seed.js';
import { httpMessage, readWarcFile, readWarcBuffer, sha1Base32, type WarcRecordRead } from '../helpers/warc-reader.js';
import { readJsonl, useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('warc');

const MAX_BODY = 100_000;
const TIMEOUT_MS = 1500;
const FILE_NAME = /^[a-z-]+-\d{14}-\d+-\d{5}\.warc\.gz$/;

/** What the site sent, raw (as on the wire after de-chunking), per path and request. */
const sent = new Map<string, Buffer[]>();
function send(res: ServerResponse, path: string, status: number, headers: Record<string, string>, body: Buffer): void {
  sent.set(path, [...(sent.get(path) ?? []), body]);
  res.writeHead(status, headers);
  res.end(body);
}
const page = (body: string): Buffer => Buffer.from(`<!doctype html><html><head><title>t</title></head><body>${body}</body></html>`);

async function warcSite() {
  const big = Buffer.concat([Buffer.from('<!doctype html><html><body>'), Buffer.alloc(3 * MAX_BODY, 'x')]);
  const img = randomBytes(5000);
  return world.web.site('W', {
    '/robots.txt': (_q, res) => send(res, '/robots.txt', 200, { 'content-type': 'text/plain' }, Buffer.from('User-agent: *\nAllow: /\n')),
    '/': (_q, res) =>
      send(res, '/', 200, { 'content-type': 'text/html', 'set-cookie': 'a=1' }, page('<a href="/a">a</a><a href="/gz">gz</a><a href="/img.png">i</a><a href="/missing">m</a><a href="/moved">mv</a><a href="/big">b</a><a href="/slow">s</a>')),
    '/a': (_q, res) => send(res, '/a', 200, { 'content-type': 'text/html' }, page('a')),
    '/gz': (_q, res) => send(res, '/gz', 200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }, gzipSync(page('<a href="/b">b</a>'))),
    '/b': (_q, res) => send(res, '/b', 200, { 'content-type': 'text/html' }, page('b')),
    '/img.png': (_q, res) => send(res, '/img.png', 200, { 'content-type': 'image/png' }, img),
    '/missing': (_q, res) => send(res, '/missing', 404, { 'content-type': 'text/html' }, page('not here')),
    '/moved': (_q, res) => send(res, '/moved', 301, { location: '/c' }, Buffer.from('moved')),
    '/c': (_q, res) => send(res, '/c', 200, { 'content-type': 'text/html' }, page('c')),
    '/big': (_q, res) => send(res, '/big', 200, { 'content-type': 'text/html' }, big),
    // The first time: headers and half a body, then nothing until past the deadline.
    '/slow': (_q, res, { count }) => {
      const body = page('slow');
      if (count > 1) return send(res, '/slow', 200, { 'content-type': 'text/html' }, body);
      sent.set('/slow', [body.subarray(0, 20)]);
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': String(body.length) });
      res.write(body.subarray(0, 20));
      setTimeout(() => res.destroy(), TIMEOUT_MS + 1000);
    },
  });
}

interface Archive {
  files: string[];
  records: (WarcRecordRead & { file: string })[];
}

async function readArchive(dir: string): Promise<Archive> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.warc.gz')).sort();
  const records: Archive['records'] = [];
  for (const f of files) {
    const r = await readWarcFile(join(dir, f));
    assert.equal(r.tornAt, null, `${f} is readable to its end`);
    assert.equal(r.records[0]?.header('WARC-Type'), 'warcinfo', `${f} opens with a warcinfo record`);
    assert.equal(r.records[0]?.header('WARC-Filename'), f);
    for (const rec of r.records) records.push({ ...rec, file: f });
  }
  return { files, records };
}

describe('WARC output', () => {
  it('every exchange is a linked request/response pair with correct digests and the bytes the server sent', async () => {
    const site = await warcSite();
    const dir = world.file('warc');
    const seed = validateSeed({
      arena: 'warc-test',
      rateLimits: { [site.key]: 'unlimited' },
      start: [`${site.origin}/`],
      maxInFlightPerDomain: 4,
      allowPrivateNetworks: true,
      maxBodyBytes: MAX_BODY,
      requestTimeoutMs: TIMEOUT_MS,
    });
    const out = world.file('warc.jsonl');
    const result = await runCrawl(world.redis, seed, { workers: 2, concurrency: 4, out, warc: { dir }, retryBaseMs: 50 });
    assert.equal(result.stats.totals.dead, 0);
    const { files, records } = await readArchive(dir);
    assert.ok(files.length >= 1 && files.every((f) => FILE_NAME.test(f)), `file names: ${files.join(', ')}`);

    const byId = new Map(records.map((r) => [r.header('WARC-Record-ID'), r]));
    const responses = records.filter((r) => r.header('WARC-Type') === 'response');
    const requests = records.filter((r) => r.header('WARC-Type') === 'request');
    for (const rec of [...responses, ...requests]) {
      assert.equal(rec.version, 'WARC/1.1');
      for (const h of ['WARC-Record-ID', 'WARC-Date', 'WARC-Target-URI', 'Content-Length']) assert.ok(rec.header(h), `${h} on ${rec.header('WARC-Type')} ${rec.header('WARC-Target-URI')}`);
      assert.equal(rec.header('WARC-IP-Address'), '127.0.0.1');
      assert.equal(rec.header('WARC-Block-Digest'), sha1Base32(rec.block), 'block digest');
    }
    for (const res of responses) {
      const peer = byId.get(res.header('WARC-Concurrent-To'));
      assert.equal(peer?.header('WARC-Type'), 'request', `response ${res.header('WARC-Target-URI')} links its request`);
      assert.equal(peer?.header('WARC-Concurrent-To'), res.header('WARC-Record-ID'), 'and the request links back');
      assert.equal(peer?.header('WARC-Target-URI'), res.header('WARC-Target-URI'));
      const msg = httpMessage(res.block);
      assert.equal(res.header('WARC-Payload-Digest'), sha1Base32(msg.payload), 'payload digest');
      const req = httpMessage(peer.block);
      const path = new URL(res.header('WARC-Target-URI') as string).pathname;
      assert.equal(req.line, `GET ${path} HTTP/1.1`, 'the request line as sent');
      assert.ok(req.headers.some(([k, v]) => k === 'user-agent' && v === seed.userAgent), 'the user agent as sent');
      const wire = sent.get(path) ?? [];
      if (res.header('WARC-Truncated')) {
        assert.ok(wire.some((b) => b.subarray(0, msg.payload.length).equals(msg.payload)), `${path}: a cut body is a prefix of what was sent`);
      } else {
        assert.ok(wire.some((b) => b.equals(msg.payload)), `${path}: payload is exactly what the server sent (${msg.payload.length} bytes)`);
      }
    }
    const urls = (p: string) => responses.filter((r) => r.header('WARC-Target-URI') === `${site.origin}${p}`);
    for (const p of ['/robots.txt', '/', '/a', '/gz', '/b', '/img.png', '/missing', '/moved', '/c', '/big']) assert.equal(urls(p).length, 1, `${p} recorded once`);
    // Content-encoding kept: the record holds the gzip bytes, its header says so.
    assert.ok(httpMessage(urls('/gz')[0]?.block as Buffer).headers.some(([k, v]) => k === 'content-encoding' && v === 'gzip'));
    assert.equal(urls('/big')[0]?.header('WARC-Truncated'), 'length');
    assert.ok(httpMessage(urls('/big')[0]?.block as Buffer).payload.length >= MAX_BODY);
    // In the order they were sent (the two workers' files are read one after the other).
    const slow = urls('/slow').sort((a, b) => Date.parse(a.header('WARC-Date') as string) - Date.parse(b.header('WARC-Date') as string));
    assert.deepEqual(slow.map((r) => r.header('WARC-Truncated') ?? 'complete'), ['time', 'complete'], 'the cut try and the later whole one');
    assert.ok(httpMessage(urls('/')[0]?.block as Buffer).headers.some(([k, v]) => k === 'set-cookie' && v === 'a=1'), 'headers as received');

    // Each output line points at its response record.
    const lines = await readJsonl(out);
    for (const line of lines) {
      assert.ok(line.warc, `${line.url} has its WARC location`);
      const rec = records.find((r) => r.file === line.warc?.file && r.offset === line.warc.offset);
      assert.equal(rec?.header('WARC-Type'), 'response', `${line.url}: the location is its response`);
      assert.equal(rec?.header('WARC-Target-URI'), line.url);
    }
    assert.equal(lines.length, 10);
  });

  it('starts a new file past --warc-max-bytes, each opened by warcinfo, never two writers on one file', async () => {
    const html = (b: string): string => page(b).toString();
    const site = await world.web.site('R', { '/': html('<a href="/1">1</a><a href="/2">2</a><a href="/3">3</a>'), '/1': html('1'), '/2': html('2'), '/3': html('3') });
    const dir = world.file('rotate');
    const seed = validateSeed({ arena: 'warc-rotate', rateLimits: { [site.key]: 'unlimited' }, start: [`${site.origin}/`], maxInFlightPerDomain: 2, allowPrivateNetworks: true });
    await runCrawl(world.redis, seed, { workers: 2, concurrency: 2, warc: { dir, maxBytes: 1 } });
    const { files, records } = await readArchive(dir);
    // robots.txt and 4 pages, one exchange per file (the first write fills a 1-byte file).
    assert.equal(files.length, 5, files.join(', '));
    assert.equal(new Set(files).size, files.length);
    for (const f of files) {
      const types = records.filter((r) => r.file === f).map((r) => r.header('WARC-Type'));
      assert.deepEqual(types, ['warcinfo', 'request', 'response'], f);
    }
  });

  it('a reader stops cleanly at a torn last member and keeps every earlier record', async () => {
    const dir = world.file('warc');
    const [file] = (await readdir(dir)).filter((f) => f.endsWith('.warc.gz'));
    const whole = await readFile(join(dir, file as string));
    const intact = readWarcBuffer(whole);
    const last = intact.records.at(-1) as WarcRecordRead;
    for (const cut of [last.offset + 5, last.offset + 40, whole.length - 3]) {
      const torn = world.file('torn.warc.gz');
      await writeFile(torn, whole);
      await truncate(torn, cut);
      const r = await readWarcFile(torn);
      assert.equal(r.tornAt, last.offset, `cut at ${cut}`);
      assert.equal(r.records.length, intact.records.length - 1);
    }
  });
});
