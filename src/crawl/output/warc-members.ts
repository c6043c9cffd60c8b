/**
 * WARC records as bytes: warcio's records and serializer (its digests from
 * node:crypto), each record one gzip member.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { createGzip, gzipSync } from 'node:zlib';
import type * as Warcio from 'warcio';
import type { WARCRecord } from 'warcio';
import type { SpoolBuffer } from './spool.js';

export const WARC_DEFAULTS = {
  /** A new file once the current one passes this size. */
  maxBytes: 1024 ** 3,
  /**
   * Bytes of one record's body the serializer keeps in memory before it
   * spools the rest to a file (its length and digests go in the record's
   * header, before the body): a large body is never held in memory twice.
   * The spool files sit in a private directory inside the WARC directory
   * (spool.ts): a worker may need in-flight exchanges × maxBodyBytes there.
   * A body held in memory is compressed in one call, a spooled one as it
   * streams back. 2 MiB: nearly every page fits (at 256 KiB, 38 of
   * python3-doc's 530 pages, a third of its bytes, went through a spool file
   * and a gzip stream: --warc crawls 0.81 of plain pages/s against 0.89, in
   * one run); the one call for a 1.7 MB page takes 9 ms of the event loop,
   * where parsing it takes several times that.
   */
  maxMemBytes: 2 * 1024 * 1024,
  /**
   * Each record is compressed by Node's zlib at this level: warcio's own
   * gzip goes through web streams and costs more CPU, and level 1 costs
   * less than level 6 for somewhat larger files (the timings: docs/benchmarks.md, "Figures behind choices in the code").
   */
  gzipLevel: 1,
} as const;

const DIGEST = { algo: 'sha-1', prefix: 'sha1:', base32: true } as const;

/** What weir takes from warcio: records, and a serializer whose digests are Node's own. */
export interface WarcioParts {
  WARCRecord: typeof Warcio.WARCRecord;
  WARCSerializer: typeof Warcio.WARCSerializer;
}

/**
 * warcio, loaded on the first record (a worker without --warc, and every
 * other command, never loads it). Its serializer hashes with hash-wasm,
 * which instantiates a WebAssembly module for every hasher (four an
 * exchange): with OpenSSL's SHA-1 from node:crypto instead, an archived
 * page of python3-doc costs about 3 ms less CPU (one worker, 528 pages:
 * 10.5 -> 9.0 s). The digests are the same bytes.
 */
let warcioModule: Promise<WarcioParts> | undefined;
export const warcio = (): Promise<WarcioParts> =>
  (warcioModule ??= import('warcio').then((w) => {
    class NodeDigestSerializer extends w.WARCSerializer {
      override newHasher(): ReturnType<Warcio.WARCSerializer['newHasher']> {
        return Promise.resolve(nodeHasher(this.digestAlgo === 'sha-256' ? 'sha256' : 'sha1') as unknown as Awaited<ReturnType<Warcio.WARCSerializer['newHasher']>>);
      }
    }
    return { WARCRecord: w.WARCRecord, WARCSerializer: NodeDigestSerializer };
  }));

/** The part of a hash-wasm hasher warcio uses (update, and digest as bytes or hex), on node:crypto. */
function nodeHasher(algorithm: 'sha1' | 'sha256'): { update(data: Uint8Array | string): unknown; digest(format?: 'binary' | 'hex'): Uint8Array | string } {
  const hash = createHash(algorithm);
  const hasher = {
    update(data: Uint8Array | string) {
      hash.update(data);
      return hasher;
    },
    digest(format?: 'binary' | 'hex') {
      const d = hash.digest();
      return format === 'binary' ? new Uint8Array(d.buffer, d.byteOffset, d.length) : d.toString('hex');
    },
  };
  return hasher;
}

/**
 * A record serialized (digests, length) and compressed as one gzip member;
 * the body's copy in `spool` (else memory). A record whose body stayed in
 * memory (nearly every page) is compressed in one call (0.35 ms for an
 * 88 KB page at level 1), a spooled one as it streams back (never held whole).
 */
export async function* member(w: WarcioParts, record: WARCRecord, spool?: SpoolBuffer): AsyncGenerator<Buffer> {
  const serialized = new w.WARCSerializer(record, { gzip: false, digest: DIGEST }, spool)[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
  const held: Uint8Array[] = [];
  for (let c = await serialized.next(); !c.done; c = await serialized.next()) {
    held.push(c.value);
    // (The first chunk comes once the serializer has read the whole body: by then the spool knows.)
    if (spool?.spooled) {
      yield* streamed(held, serialized);
      return;
    }
  }
  // (On this thread: libuv's thread pool took a fifth of it off the event
  // loop, but the --warc crawl was no faster on 2 cores, 87-97 pages/s
  // either way in alternated runs, and the hand-off costs CPU of its own.
  // Nor was a worker thread making and writing every record: 116 against
  // 119 pages/s, 0.5 ms more CPU a page, nine alternated runs.)
  yield gzipSync(Buffer.concat(held), { level: WARC_DEFAULTS.gzipLevel });
}

/** The chunks held so far and the rest of the record, through a gzip stream. */
async function* streamed(held: Uint8Array[], rest: AsyncIterator<Uint8Array>): AsyncGenerator<Buffer> {
  const gzip = createGzip({ level: WARC_DEFAULTS.gzipLevel });
  const source = Readable.from(
    (async function* () {
      yield* held;
      for (let c = await rest.next(); !c.done; c = await rest.next()) yield c.value;
    })(),
  );
  // A failed read (a spool on a full disk) fails the member, not the process.
  source.on('error', (err) => gzip.destroy(err));
  yield* source.pipe(gzip) as AsyncIterable<Buffer>;
}

export async function wholeMember(w: WarcioParts, record: WARCRecord): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of member(w, record)) chunks.push(c);
  return Buffer.concat(chunks);
}

