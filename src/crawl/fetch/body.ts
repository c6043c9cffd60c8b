import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

function decoderFor(encoding: string): Readable | null {
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return null;
  }
}

/** A response body's streams, raw first, decoded last (destroy them all when done). */
export interface BodyStages {
  stages: Readable[];
  /** The decoded body, or null with the encoding weir cannot decode. */
  stream: Readable | null;
  unsupported: string | null;
}

/** Chains decoders for a Content-Encoding header (stacked encodings, last applied first undone). */
export function decodeStages(body: Readable, encodingHeader: string | string[] | undefined): BodyStages {
  const encodings = (Array.isArray(encodingHeader) ? encodingHeader.join(',') : (encodingHeader ?? ''))
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '' && e !== 'identity');
  const stages: Readable[] = [body];
  let stream: Readable = body;
  for (const enc of encodings.reverse()) {
    const d = decoderFor(enc);
    if (!d) return { stages, stream: null, unsupported: enc };
    stream.on('error', (e) => d.destroy(e));
    stream = stream.pipe(d as unknown as NodeJS.WritableStream) as unknown as Readable;
    stages.push(stream);
  }
  return { stages, stream, unsupported: null };
}

/** Destroying a body mid-stream makes undici and zlib emit late errors: nobody is listening any more. */
export function destroyStages(stages: Readable[]): void {
  for (const s of stages) {
    s.on('error', () => undefined);
    s.destroy();
  }
}

/**
 * Reads a body up to `maxBytes`, counted as it streams: the rest is never
 * read. `keep` false reads without keeping (the bytes went elsewhere, to a
 * WARC record); a function is handed each chunk instead of it being kept,
 * and stops the reading by returning false. The body returned is then empty.
 */
export async function readCapped(
  stream: Readable,
  maxBytes: number,
  keep: boolean | ((chunk: Buffer) => boolean) = true,
  /** Shown every chunk read, whole (the one that crosses maxBytes too): a WARC capture of an undecoded body. */
  observe?: (chunk: Buffer) => void,
): Promise<{ body: Buffer; bytes: number; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  const take = (buf: Buffer): boolean => {
    if (keep === true) chunks.push(buf);
    return typeof keep === 'function' ? keep(buf) : true;
  };
  for await (const chunk of stream) {
    const buf = chunk as Buffer;
    observe?.(buf);
    const room = maxBytes - bytes;
    if (buf.length > room) {
      if (room > 0) take(buf.subarray(0, room));
      return { body: Buffer.concat(chunks), bytes: bytes + Math.max(0, room), truncated: true };
    }
    bytes += buf.length;
    if (!take(buf)) return { body: Buffer.concat(chunks), bytes, truncated: true };
  }
  return { body: Buffer.concat(chunks), bytes, truncated: false };
}
