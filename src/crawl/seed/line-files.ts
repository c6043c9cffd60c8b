/**
 * Seed lists kept in files (start URLs, domain limits): read line by line as
 * they stream, never whole, gunzipped when they start with gzip's magic
 * bytes; each read twice by kickoff: a check pass that refuses a file with
 * too many bad lines before anything is written, then the good lines a
 * batch at a time.
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { SeedError } from './checks.js';

/**
 * A file may hold this share of bad lines (and at least `minTolerated` of
 * them whatever its size) before it is refused whole; the first `examples`
 * are named by file and line; lines are judged and handed on `batch` at a
 * time; a line longer than `maxLineBytes` is bad. (A kickoff holds two
 * batches in flight, and V8 lets its heap grow with them: at 10,000 lines a
 * kickoff of 10^6 start URLs over as many new domains peaked at 174-197 MiB
 * resident against the 200 MB bound, at 5,000 at 151-159 MiB in the same
 * wall time, and 1,000 domains' 10^6 URLs at 117-122 MiB against 133.)
 */
export const LINE_FILE_LIMITS = { maxBadShare: 0.01, minTolerated: 10, examples: 10, batch: 5_000, maxLineBytes: 8192 } as const;

/** Where lines end: \n, \r\n or a lone \r (as readline reads them). */
const LINE_BREAK = /\r\n|\r|\n/;
/** A line that ran past maxLineBytes, its text dropped (no line read from a file can be a lone \n). */
const TOO_LONG = '\n';

/** What a file holds, by a first read through it. */
export interface LineFileCheck {
  file: string;
  /** Lines with content (blank lines and # comments left out). */
  lines: number;
  /** Of those, the ones that are not usable: skipped. */
  bad: number;
  /** "file:line: why", the first few. */
  examples: string[];
}

/** A line's verdict: its value, why it is bad, or null for a line to pass over (a header). */
export type Judged<T> = { value: T } | { bad: string } | null;

/** Judges a batch of lines (trimmed, not blank, not comments), one verdict each in order. */
export type LineJudge<T> = (lines: string[]) => Judged<T>[] | Promise<Judged<T>[]>;

/**
 * The file's lines, as they stream, in chunks: each chunk's lines and the
 * number of its first (from 1). Lines end at \n, \r\n or a lone \r. A
 * line longer than LINE_FILE_LIMITS.maxLineBytes is not kept whole, however
 * long it runs (a file with no line breaks cannot fill memory): it comes as
 * TOO_LONG. Whole chunks, not a line at a time: a list of a million lines
 * would otherwise cost an iterator step, its promises and their garbage a
 * line.
 */
async function* lineChunks(field: string, file: string): AsyncGenerator<{ first: number; lines: string[] }> {
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
    throw new SeedError(field, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const raw = createReadStream(file, { highWaterMark: 256 * 1024 });
  const input: Readable = gzip ? raw.pipe(createGunzip()) : raw;
  raw.on('error', (err) => input.destroy(err));
  const decoder = new StringDecoder('utf8');
  // The line not yet ended (a '\r' at its end: perhaps the first half of a \r\n), and whether it ran past the limit (its text then dropped).
  let pending = '';
  let overlong = false;
  let n = 0;
  const cut = (text: string, last: boolean): string[] => {
    let buf = pending + text;
    const held = !last && buf.endsWith('\r');
    if (held) buf = buf.slice(0, -1);
    const lines = buf.split(LINE_BREAK);
    pending = lines.pop() ?? '';
    if (overlong && lines.length > 0) {
      lines[0] = TOO_LONG;
      overlong = false;
    }
    if (pending.length > LINE_FILE_LIMITS.maxLineBytes) {
      pending = '';
      overlong = true;
    }
    if (held) pending += '\r';
    if (last && (pending !== '' || overlong)) lines.push(overlong ? TOO_LONG : pending);
    return lines;
  };
  try {
    for await (const chunk of input) {
      const lines = cut(decoder.write(chunk as Buffer), false);
      if (lines.length > 0) yield { first: n + 1, lines };
      n += lines.length;
    }
    const lines = cut(decoder.end(), true);
    if (lines.length > 0) yield { first: n + 1, lines };
  } catch (err) {
    throw new SeedError(field, `${file}: unreadable after line ${n}: ${(err as Error).message}`);
  }
}

/** Each content line's number and verdict, LINE_FILE_LIMITS.batch lines at a time. */
async function* judged<T>(field: string, file: string, judge: LineJudge<T>): AsyncGenerator<[number, Judged<T>][]> {
  let numbers: number[] = [];
  let texts: string[] = [];
  const verdicts = async (): Promise<[number, Judged<T>][]> => {
    const tooLong = texts.map((t) => t === TOO_LONG || Buffer.byteLength(t) > LINE_FILE_LIMITS.maxLineBytes);
    const answers = await judge(texts.filter((_, i) => !tooLong[i]));
    let next = 0;
    const out = numbers.map((n, i): [number, Judged<T>] => [n, tooLong[i] ? { bad: `longer than ${LINE_FILE_LIMITS.maxLineBytes} bytes` } : (answers[next++] ?? null)]);
    numbers = [];
    texts = [];
    return out;
  };
  for await (const { first, lines } of lineChunks(field, file)) {
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] as string;
      // (TOO_LONG is told before trimming: it is white space.)
      const t = line === TOO_LONG ? line : line.trim();
      if (t === '' || t.startsWith('#')) continue;
      numbers.push(first + i);
      texts.push(t);
      if (texts.length >= LINE_FILE_LIMITS.batch) yield await verdicts();
    }
  }
  if (texts.length > 0) yield await verdicts();
}

/**
 * Reads a file through once, without writing anything: its content lines
 * and its bad ones. Refuses it (SeedError naming the file and its first bad
 * lines) when more are bad than LINE_FILE_LIMITS allows.
 */
export async function checkLineFile<T>(field: string, file: string, judge: LineJudge<T>, what: string): Promise<LineFileCheck> {
  const check: LineFileCheck = { file, lines: 0, bad: 0, examples: [] };
  for await (const batch of judged(field, file, judge)) {
    for (const [n, v] of batch) {
      if (v === null) continue;
      check.lines++;
      if ('bad' in v) {
        check.bad++;
        if (check.examples.length < LINE_FILE_LIMITS.examples) check.examples.push(`${file}:${n}: ${v.bad}`);
      }
    }
  }
  const tolerated = Math.max(LINE_FILE_LIMITS.minTolerated, Math.floor(check.lines * LINE_FILE_LIMITS.maxBadShare));
  if (check.bad > tolerated) {
    throw new SeedError(field, `${file}: ${check.bad} of ${check.lines} lines are not ${what} (at most ${tolerated} may be), nothing was queued; the first: ${check.examples.join('; ')}`);
  }
  return check;
}

/** The file's good lines' values, a batch at a time, in file order (bad lines skipped: checkLineFile counted them). */
export async function* lineFileValues<T>(field: string, file: string, judge: LineJudge<T>): AsyncGenerator<T[]> {
  for await (const batch of judged(field, file, judge)) {
    const values: T[] = [];
    for (const [, v] of batch) if (v !== null && 'value' in v) values.push(v.value);
    if (values.length > 0) yield values;
  }
}
