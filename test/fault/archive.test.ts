/**
 * Archives on a disk that runs out (issue 29, items 1, 3, 4 and 10): a WARC
 * file stays whole and its offsets true when a write fails; bodies are
 * spooled in a private directory and never left behind; an interim 1xx
 * response is not archived as the response, and the real HTTP version is;
 * output files are not opened through symbolic links and not world-readable.
 * Files are read back with the test's own reader (not warcio).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, statfs, symlink, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isWeirError } from '../../src/errors.js';
import { Fetcher } from '../../src/crawl/fetch/index.js';
import { JsonlWriter, WarcWriter, type ReceivedResponse, type SentRequest } from '../../src/crawl/output/index.js';
import { SMALL_FS_SKIP, useSmallFs } from '../helpers/small-fs.js';
import { httpMessage, readWarcFile } from '../helpers/warc-reader.js';

const sent = (url: string): SentRequest => ({ url, head: `GET ${new URL(url).pathname} HTTP/1.1\r\nhost: example.test\r\n\r\n`, ip: '127.0.0.1', at: new Date() });

/** A 200 response whose body streams `body` in 64 KiB chunks; `pause` may hold it once 320 KiB are out (past what is kept in memory). */
function response(body: Buffer, pause?: Promise<void>): ReceivedResponse {
  return {
    statusLine: 'HTTP/1.1 200 OK',
    headers: [['content-type', 'application/octet-stream']],
    body: (async function* () {
      for (let i = 0; i < body.length; i += 65536) {
        yield body.subarray(i, i + 65536);
        if (i === 4 * 65536 && pause) await pause;
      }
    })(),
    truncated: () => null,
  };
}

/** Fills `dir`'s filesystem but for `room` bytes; the filler's path. */
async function fillBut(dir: string, room: number, name: string): Promise<string> {
  const s = await statfs(dir);
  const path = join(dir, name);
  await writeFile(path, Buffer.alloc(Math.max(0, s.bavail * s.bsize - room)));
  return path;
}

const mode = async (p: string): Promise<number> => (await stat(p)).mode & 0o777;

/** What `list` lists once it lists anything, looked at every 10 ms, `tries` times at most (then the empty list). */
async function listedSoon(list: () => Promise<string[]>, tries: number): Promise<string[]> {
  for (let i = 0; i < tries; i++) {
    await new Promise((r) => setTimeout(r, 10));
    const found = await list();
    if (found.length > 0) return found;
  }
  return [];
}

describe('archives on a full disk', () => {
  const small = useSmallFs(2 * 1024 * 1024);

  it('a write that fails leaves the file as it was: the next records start where their locations say, and the file reads through', async (t) => {
    const fs = small.get();
    if (!fs) return t.skip(SMALL_FS_SKIP);
    const dir = join(fs.dir, 'offsets');
    // Room for a few 200 kB records (kept in memory, not spooled), then none.
    const filler = await fillBut(fs.dir, 800_000, 'filler');
    const writer = new WarcWriter({ dir, arena: 'full', userAgent: 'weir-test' });
    const written: { url: string; offset: number; file: string }[] = [];
    let failures = 0;
    for (let i = 0; failures === 0 && i < 20; i++) {
      const url = `http://example.test/r${i}`;
      try {
        written.push({ url, ...(await writer.writeExchange(sent(url), response(randomBytes(200_000)))) });
      } catch (err) {
        assert.ok(isWeirError(err, 'WEIR_WARC'), `a WEIR_WARC error, got ${String(err)}`);
        failures++;
      }
    }
    assert.equal(failures, 1, 'the disk filled');
    assert.ok(written.length >= 2, `records before it: ${written.length}`);
    // Space again: the writer goes on in the same file.
    await unlink(filler);
    for (let i = 0; i < 2; i++) {
      const url = `http://example.test/after${i}`;
      written.push({ url, ...(await writer.writeExchange(sent(url), response(randomBytes(200_000)))) });
    }
    await writer.close();
    const files = new Set(written.map((w) => w.file));
    assert.equal(files.size, 1, 'one file: cut back, not abandoned');
    const read = await readWarcFile(join(dir, [...files][0] as string));
    assert.equal(read.tornAt, null, 'the whole file reads through');
    const responses = read.records.filter((r) => r.header('WARC-Type') === 'response');
    assert.deepEqual(
      responses.map((r) => ({ url: r.header('WARC-Target-URI'), offset: r.offset })),
      written.map((w) => ({ url: w.url, offset: w.offset })),
      'every location is where its record starts',
    );
    assert.equal(await mode(join(dir, [...files][0] as string)), 0o640, 'an archive is 0640');
    assert.equal(await mode(dir), 0o750, 'in a 0750 directory');
    await rm(dir, { recursive: true });
  });

  it('a body spooled to a full disk fails its exchange (no crash), and no spool file is left', async (t) => {
    const fs = small.get();
    if (!fs) return t.skip(SMALL_FS_SKIP);
    const dir = join(fs.dir, 'spool');
    const filler = await fillBut(fs.dir, 500_000, 'filler2');
    const writer = new WarcWriter({ dir, arena: 'spool', userAgent: 'weir-test', maxMemBytes: 256 * 1024 });
    // 1 MB: past the 256 KiB kept in memory, and past the room left.
    await assert.rejects(writer.writeExchange(sent('http://example.test/huge'), response(randomBytes(1_000_000))), (err: unknown) => isWeirError(err, 'WEIR_WARC'));
    const spools = (await readdir(dir)).filter((f) => f.startsWith('.spool-'));
    assert.equal(spools.length, 1);
    assert.deepEqual(await readdir(join(dir, spools[0] as string)), [], 'the failed spool file is gone');
    await unlink(filler);

    // With room: a big body is spooled in the private directory (0700, the file 0600) while it streams, then removed.
    let release = (): void => undefined;
    const held = new Promise<void>((r) => (release = r));
    const body = randomBytes(700_000);
    const writing = writer.writeExchange(sent('http://example.test/big'), response(body, held));
    const spooled = await listedSoon(() => readdir(join(dir, spools[0] as string)), 200);
    assert.equal(spooled.length, 1, 'one spool file while the body streams');
    assert.equal(await mode(join(dir, spools[0] as string, spooled[0] as string)), 0o600, 'readable by the worker only');
    release();
    const at = await writing;
    assert.equal(await mode(join(dir, spools[0] as string)), 0o700, 'the spool directory is private');
    assert.deepEqual(await readdir(join(dir, spools[0] as string)), [], 'removed once written');
    await writer.close();
    assert.deepEqual((await readdir(dir)).filter((f) => f.startsWith('.spool-')), [], 'the spool directory goes with the writer');
    const rec = (await readWarcFile(join(dir, at.file))).records.find((r) => r.offset === at.offset);
    assert.ok(rec);
    assert.ok(httpMessage(rec.block).payload.equals(body), 'the spooled body archived whole');
  });

  it('by default a body of a page up to 2 MiB is kept in memory, not spooled, and archived whole', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weir-inmem-'));
    try {
      const writer = new WarcWriter({ dir, arena: 'inmem', userAgent: 'weir-test' });
      let release = (): void => undefined;
      const held = new Promise<void>((r) => (release = r));
      const body = randomBytes(1_500_000);
      const writing = writer.writeExchange(sent('http://example.test/big-page'), response(body, held));
      // Held after 320 KiB (past the 256 KiB that used to be kept): long enough for a spool file to appear if one were made.
      const spools = await listedSoon(async () => (await readdir(dir).catch(() => [] as string[])).filter((f) => f.startsWith('.spool-')), 100);
      assert.equal(spools.length, 1, 'the spool directory is made for the exchange');
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(await readdir(join(dir, spools[0] as string)), [], 'no spool file for a body under 2 MiB');
      release();
      const at = await writing;
      await writer.close();
      const rec = (await readWarcFile(join(dir, at.file))).records.find((r) => r.offset === at.offset);
      assert.ok(rec);
      assert.ok(httpMessage(rec.block).payload.equals(body), 'the body archived whole');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a spool directory left by a killed worker of this host is removed by the next writer; a live process's is kept", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weir-spools-'));
    try {
      const host = hostname().replace(/[^A-Za-z0-9.]/g, '_').slice(0, 64);
      const gone = spawnSync(process.execPath, ['-e', '0']).pid;
      for (const [pid, suffix] of [[gone, 'AbCdE1'], [process.ppid, 'AbCdE2']] as const) {
        await mkdir(join(dir, `.spool-${host}-${pid}-${suffix}`));
        await writeFile(join(dir, `.spool-${host}-${pid}-${suffix}`, '1.body'), 'left behind');
      }
      await mkdir(join(dir, `.spool-other_host-${gone}-AbCdE3`));
      const writer = new WarcWriter({ dir, arena: 'spools', userAgent: 'weir-test' });
      await writer.writeExchange(sent('http://example.test/one'), response(Buffer.from('hi')));
      const left = (await readdir(dir)).filter((f) => f.startsWith('.spool-')).sort();
      assert.ok(!left.includes(`.spool-${host}-${gone}-AbCdE1`), `the dead worker's spool is gone: ${left.join(' ')}`);
      assert.ok(left.includes(`.spool-${host}-${process.ppid}-AbCdE2`), "a live process's is kept");
      assert.ok(left.includes(`.spool-other_host-${gone}-AbCdE3`), "another host's is not this host's to judge");
      await writer.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('output files: never through a symbolic link, created 0640', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weir-out-'));
    try {
      const victim = join(dir, 'victim');
      await writeFile(victim, 'keep me\n');
      const link = join(dir, 'out.jsonl');
      await symlink(victim, link);
      for (const truncate of [true, false]) {
        assert.throws(() => new JsonlWriter(link, { truncate }), (err: unknown) => isWeirError(err, 'WEIR_OUTPUT') && /symbolic link/.test((err as Error).message));
      }
      assert.equal(await readFile(victim, 'utf8'), 'keep me\n', 'the link target is untouched');
      const out = join(dir, 'real.jsonl');
      const w = new JsonlWriter(out, { truncate: true });
      await w.close();
      assert.equal(await mode(out), 0o640);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('interim responses', () => {
  it('a 103 Early Hints before the response is not archived as it; the response keeps its own HTTP version', async () => {
    const server = createServer((socket) => {
      socket.once('data', () => socket.end('HTTP/1.1 103 Early Hints\r\nLink: </hint.css>; rel=preload\r\n\r\nHTTP/1.0 200 OK\r\nContent-Type: text/html\r\nX-Real: yes\r\nContent-Length: 5\r\n\r\nhello'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const dir = await mkdtemp(join(tmpdir(), 'weir-1xx-'));
    const archive = new WarcWriter({ dir, arena: 'hints', userAgent: 'weir-test' });
    const fetcher = new Fetcher({ userAgent: 'weir-test', timeoutMs: 5000, maxBodyBytes: 100_000, allowPrivateNetworks: true, archive });
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
      const res = await fetcher.fetch(url, { wantBody: () => true });
      assert.equal(res.status, 200);
      assert.ok(res.warc);
      await archive.close();
      const rec = (await readWarcFile(join(dir, res.warc.file))).records.find((r) => r.offset === res.warc?.offset);
      assert.ok(rec);
      const msg = httpMessage(rec.block);
      assert.equal(msg.line, 'HTTP/1.0 200 OK');
      assert.ok(msg.headers.some(([k, v]) => k.toLowerCase() === 'x-real' && v === 'yes'), "the final response's headers");
      assert.ok(!msg.headers.some(([k]) => k.toLowerCase() === 'link'), "not the 103's");
      assert.equal(msg.payload.toString(), 'hello');
    } finally {
      await fetcher.close();
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
