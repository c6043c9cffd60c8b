/**
 * A small WARC reader written from the standard (WARC/1.1 and RFC 1952),
 * deliberately not warcio (which writes weir's files): it walks the gzip
 * members one by one (so it knows where each record starts), checks each
 * member's CRC-32 and length, parses the record, and stops at the first
 * member that is torn or corrupt, saying where.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { crc32, inflateRawSync } from 'node:zlib';

export interface WarcRecordRead {
  /** Byte offset of the record's gzip member in the file. */
  offset: number;
  version: string;
  headers: Map<string, string[]>;
  block: Buffer;
  header(name: string): string | undefined;
}

export interface WarcFileRead {
  records: WarcRecordRead[];
  /** Where the first unreadable member starts (a torn last write), or null. */
  tornAt: number | null;
  size: number;
}

/** Skips a gzip member's header (RFC 1952 §2.3.1); returns where the deflate data starts. */
function memberData(buf: Buffer, at: number): number {
  if (buf.length < at + 10 || buf[at] !== 0x1f || buf[at + 1] !== 0x8b || buf[at + 2] !== 8) throw new Error(`no gzip member at ${at}`);
  const flags = buf[at + 3] as number;
  let p = at + 10;
  if (flags & 4) p += 2 + buf.readUInt16LE(p);
  if (flags & 8) p = buf.indexOf(0, p) + 1;
  if (flags & 16) p = buf.indexOf(0, p) + 1;
  if (flags & 2) p += 2;
  if (p <= at || p > buf.length) throw new Error(`torn gzip header at ${at}`);
  return p;
}

function parseRecord(text: Buffer, offset: number): WarcRecordRead {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`record at ${offset}: no end of headers`);
  const [version = '', ...lines] = text.subarray(0, end).toString('utf8').split('\r\n');
  if (!/^WARC\/1\.[01]$/.test(version)) throw new Error(`record at ${offset}: not a WARC record (${version.slice(0, 20)})`);
  const headers = new Map<string, string[]>();
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i <= 0) throw new Error(`record at ${offset}: bad header line ${JSON.stringify(line)}`);
    const name = line.slice(0, i).toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(i + 1).trim()]);
  }
  const length = Number(headers.get('content-length')?.[0]);
  if (!Number.isInteger(length)) throw new Error(`record at ${offset}: no Content-Length`);
  const block = text.subarray(end + 4, end + 4 + length);
  if (block.length !== length || text.subarray(end + 4 + length).toString() !== '\r\n\r\n') throw new Error(`record at ${offset}: block is not Content-Length bytes followed by CRLF CRLF`);
  return { offset, version, headers, block, header: (n) => headers.get(n.toLowerCase())?.[0] };
}

export function readWarcBuffer(buf: Buffer): WarcFileRead {
  const records: WarcRecordRead[] = [];
  let at = 0;
  while (at < buf.length) {
    try {
      const data = memberData(buf, at);
      const { buffer, engine } = inflateRawSync(buf.subarray(data), { info: true }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
      const trailer = data + engine.bytesWritten;
      if (trailer + 8 > buf.length) throw new Error('torn trailer');
      if (buf.readUInt32LE(trailer) !== crc32(buffer) || buf.readUInt32LE(trailer + 4) !== buffer.length % 2 ** 32) throw new Error('CRC or length mismatch');
      records.push(parseRecord(buffer, at));
      at = trailer + 8;
    } catch {
      return { records, tornAt: at, size: buf.length };
    }
  }
  return { records, tornAt: null, size: buf.length };
}

export async function readWarcFile(path: string): Promise<WarcFileRead> {
  return readWarcBuffer(await readFile(path));
}

/** RFC 4648 base32, as WARC digests are written. */
export function base32(bytes: Buffer): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out.padEnd(Math.ceil(out.length / 8) * 8, '=');
}

export const sha1Base32 = (b: Buffer): string => `sha1:${base32(createHash('sha1').update(b).digest())}`;

/** An HTTP message in a record's block: its first line, headers, and payload (the bytes after the blank line). */
export function httpMessage(block: Buffer): { line: string; headers: [string, string][]; payload: Buffer } {
  const end = block.indexOf('\r\n\r\n');
  const [line = '', ...rest] = block.subarray(0, end).toString('latin1').split('\r\n');
  const headers = rest.map((h): [string, string] => [h.slice(0, h.indexOf(':')).toLowerCase(), h.slice(h.indexOf(':') + 1).trim()]);
  return { line, headers, payload: block.subarray(end + 4) };
}
