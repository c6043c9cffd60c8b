import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { normalizeUrl } from '../urls/index.js';
import { SeedError } from './checks.js';

/**
 * A start file may hold this share of bad lines (and at least `minTolerated`
 * of them whatever its size) before it is refused whole; the first
 * `examples` are named by file and line; URLs go to the queue `batch` at a
 * time; a line longer than `maxLineBytes` is bad.
 */
export const START_FILE_LIMITS = { maxBadShare: 0.01, minTolerated: 10, examples: 10, batch: 10_000, maxLineBytes: 8192 } as const;

/** What a start file holds, by a first read through it. */
export interface StartFileCheck {
  file: string;
  /** Lines that are URLs (blank lines and # comments left out). */
  lines: number;
  /** Of those, the ones that are not a crawlable URL inside a crawl domain: skipped. */
  bad: number;
  /** "file:line: why", the first few. */
  examples: string[];
}

/** The file's lines, numbered from 1, gunzipped when it starts with gzip's magic bytes (whatever its name). */
async function* numberedLines(file: string): AsyncGenerator<[number, string]> {
  let gzip = false;
  try {
    const fh = await open(file, 'r');
    try {
      const head = Buffer.alloc(2);
      const { bytesRead } = await fh.read(head, 0, 2, 0);
      gzip = bytesRead === 2 && head[0] === 0x1f && head[1] === 0x8b;
    } finally {
      await fh.close();
    }
  } catch (err) {
    throw new SeedError('startFiles', `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const raw = createReadStream(file);
  const input: Readable = gzip ? raw.pipe(createGunzip()) : raw;
  raw.on('error', (err) => input.destroy(err));
  let n = 0;
  try {
    for await (const line of createInterface({ input, crlfDelay: Infinity })) yield [++n, line];
  } catch (err) {
    throw new SeedError('startFiles', `${file}: unreadable after line ${n}: ${(err as Error).message}`);
  }
}

/** A line as a URL to queue: the normalized URL, or why it is not one; null for a blank line or a comment. */
function lineUrl(line: string, inScope: (url: string) => boolean): { url: string } | { bad: string } | null {
  const t = line.trim();
  if (t === '' || t.startsWith('#')) return null;
  if (Buffer.byteLength(t) > START_FILE_LIMITS.maxLineBytes) return { bad: `longer than ${START_FILE_LIMITS.maxLineBytes} bytes` };
  const url = normalizeUrl(t);
  if (!url) return { bad: `not an absolute http(s) URL: ${JSON.stringify(t.slice(0, 100))}` };
  if (!inScope(url)) return { bad: `${url.slice(0, 200)} is not inside any domain of rateLimits` };
  return { url };
}

/**
 * Reads a start file through once, without queueing anything: its URL
 * lines and its bad ones. Refuses it (SeedError naming the file and its
 * first bad lines) when more than START_FILE_LIMITS allows are bad.
 */
export async function checkStartFile(file: string, inScope: (url: string) => boolean): Promise<StartFileCheck> {
  const check: StartFileCheck = { file, lines: 0, bad: 0, examples: [] };
  for await (const [n, line] of numberedLines(file)) {
    const u = lineUrl(line, inScope);
    if (u === null) continue;
    check.lines++;
    if ('bad' in u) {
      check.bad++;
      if (check.examples.length < START_FILE_LIMITS.examples) check.examples.push(`${file}:${n}: ${u.bad}`);
    }
  }
  const tolerated = Math.max(START_FILE_LIMITS.minTolerated, Math.floor(check.lines * START_FILE_LIMITS.maxBadShare));
  if (check.bad > tolerated) {
    throw new SeedError('startFiles', `${file}: ${check.bad} of ${check.lines} lines are not start URLs (at most ${tolerated} may be), nothing was queued; the first: ${check.examples.join('; ')}`);
  }
  return check;
}

/** The file's good URLs, START_FILE_LIMITS.batch at a time, in file order (bad lines skipped: checkStartFile counted them). */
export async function* startFileUrls(file: string, inScope: (url: string) => boolean): AsyncGenerator<string[]> {
  let batch: string[] = [];
  for await (const [, line] of numberedLines(file)) {
    const u = lineUrl(line, inScope);
    if (u === null || 'bad' in u) continue;
    batch.push(u.url);
    if (batch.length >= START_FILE_LIMITS.batch) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}
