/** Seed list files read as they stream: line breaks of every kind, across chunks, and lines too long to keep. */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { checkLineFile, LINE_FILE_LIMITS, lineFileValues, type LineJudge } from '../../src/crawl/seed/line-files.js';

/** Every line good, its text its value (a line starting with 'bad' is bad). */
const echo: LineJudge<string> = (lines) => lines.map((l) => (l.startsWith('bad') ? { bad: 'said so' } : { value: l }));

async function values(file: string): Promise<string[]> {
  const out: string[] = [];
  for await (const batch of lineFileValues('startFiles', file, echo)) out.push(...batch);
  return out;
}

describe('line files', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weir-lines-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('lines end at \\n, \\r\\n or a lone \\r, also where a chunk ends between \\r and \\n; the last needs no break; blanks and comments pass over', async () => {
    // (The file is read 256 KiB at a time: 2,621 lines of 100 bytes and one of 43 put a \r\n across that boundary, or a lone \r at it.)
    const filler = Array.from({ length: 2621 }, (_, i) => `f${String(i).padStart(98, '0')}`);
    const head = `${filler.join('\n')}\n${'a'.repeat(43)}`;
    assert.equal(Buffer.byteLength(head), 256 * 1024 - 1);
    const text = `${head}\r\nb\rc\n\n# note\r\n  d  \re`;
    const want = [...filler, 'a'.repeat(43), 'b', 'c', 'd', 'e'];
    const file = join(dir, 'breaks.txt');
    await writeFile(file, text);
    assert.deepEqual(await values(file), want);
    // (A \r\n read as two breaks would number the lines after it one too high.)
    const numbered = join(dir, 'numbered.txt');
    await writeFile(numbered, `${head}\r\nbad b\n`);
    assert.deepEqual((await checkLineFile('startFiles', numbered, echo, 'lines')).examples, [`${numbered}:2623: said so`]);
    const lone = join(dir, 'lone.txt');
    await writeFile(lone, `${head}\rg\n`);
    assert.deepEqual((await values(lone)).slice(-2), ['a'.repeat(43), 'g']);
    const gz = join(dir, 'breaks.txt.gz');
    await writeFile(gz, gzipSync(text));
    assert.deepEqual(await values(gz), want);
  });

  it('a line longer than the limit is bad, named by its number, and never held whole, however long it runs', async () => {
    const file = join(dir, 'long.txt');
    const long = 'y'.repeat(3 * 1024 * 1024);
    await writeFile(file, `one\n${long}\nbad two\nthree\n${'z'.repeat(LINE_FILE_LIMITS.maxLineBytes + 1)}`);
    const check = await checkLineFile('startFiles', file, echo, 'lines');
    assert.deepEqual([check.lines, check.bad], [5, 3]);
    assert.deepEqual(check.examples, [`${file}:2: longer than ${LINE_FILE_LIMITS.maxLineBytes} bytes`, `${file}:3: said so`, `${file}:5: longer than ${LINE_FILE_LIMITS.maxLineBytes} bytes`]);
    assert.deepEqual(await values(file), ['one', 'three']);
  });

  it('line numbers count every line, blank ones too, across chunks and batches', async () => {
    const n = LINE_FILE_LIMITS.batch * 2 + 7;
    const lines = Array.from({ length: n }, (_, i) => (i % 1000 === 999 ? '' : i === n - 3 ? 'bad here' : `l${i}`));
    const file = join(dir, 'many.txt.gz');
    await writeFile(file, gzipSync(lines.join('\n')));
    const check = await checkLineFile('startFiles', file, echo, 'lines');
    assert.deepEqual(check.examples, [`${file}:${n - 2}: said so`]);
    assert.deepEqual(await values(file), lines.filter((l) => l !== '' && l !== 'bad here'));
  });
});
