import { createHash, randomUUID } from 'node:crypto';
import { mkdir, open, unlink, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createGzip, gzipSync } from 'node:zlib';
import type * as Warcio from 'warcio';
import type { WARCRecord } from 'warcio';
import { isWeirError, WeirError } from '../../errors.js';
import { SpoolBuffer, SpoolDir } from './spool.js';

/** Where a record starts: its file (name only, in the WARC directory) and byte offset (the start of its gzip member). */
export interface WarcLocation {
  file: string;
  offset: number;
}

export const WARC_DEFAULTS = {
  /** A new file once the current one passes this size. */
  maxBytes: 1024 ** 3,
  /**
   * Bytes of one record's body the serializer keeps in memory before it
   * spools the rest to a file (its length and digests go in the record's
   * header, before the body): a large body is never held in memory twice.
   * The spool files sit in a private directory inside the WARC directory
   * (spool.ts): a worker may need in-flight exchanges × maxBodyBytes there.
   */
  maxMemBytes: 256 * 1024,
  /**
   * Each record is compressed by Node's zlib at this level: warcio's own
   * gzip goes through web streams and costs more CPU, and level 1 costs
   * less than level 6 for somewhat larger files (the timings: docs/benchmarks.md, "Figures behind choices in the code").
   */
  gzipLevel: 1,
  /** A record up to this size is compressed in one call (0.4-0.6 ms of the event loop for an 88 KB page at level 1); a larger one as it streams. */
  syncGzipBytes: 256 * 1024,
} as const;

/** Why a body was cut (WARC/1.1 §5.13): at the size limit, at the deadline, or the connection went. */
export type Truncation = 'length' | 'time' | 'disconnect';

/** The request as it was written to the socket (undici's header block) and where it went. */
export interface SentRequest {
  url: string;
  /** "GET /path HTTP/1.1\r\nhost: …\r\n…" as sent. */
  head: string;
  ip: string | null;
  at: Date;
}

export interface ReceivedResponse {
  statusLine: string;
  headers: [string, string][];
  /** The body as received (content-encoding kept), as it streams. */
  body: AsyncIterable<Uint8Array>;
  /** Asked once the body has ended: why it was cut, if it was. */
  truncated: () => Truncation | null;
}

export interface WarcWriterOptions {
  dir: string;
  arena: string;
  userAgent: string;
  maxBytes?: number;
  software?: string;
}

const DIGEST = { algo: 'sha-1', prefix: 'sha1:', base32: true } as const;

/** What weir takes from warcio: records, and a serializer whose digests are Node's own. */
interface WarcioParts {
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
const warcio = (): Promise<WarcioParts> =>
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
 * the body's copy in `spool` (else memory). A record up to
 * WARC_DEFAULTS.syncGzipBytes (nearly every page) is compressed in one call,
 * a larger one as it streams (never held whole, nor compressed in one long
 * block of the event loop).
 */
async function* member(w: WarcioParts, record: WARCRecord, spool?: SpoolBuffer): AsyncGenerator<Buffer> {
  const serialized = new w.WARCSerializer(record, { gzip: false, digest: DIGEST }, spool)[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
  const held: Uint8Array[] = [];
  let size = 0;
  for (let c = await serialized.next(); !c.done; c = await serialized.next()) {
    held.push(c.value);
    size += c.value.length;
    if (size > WARC_DEFAULTS.syncGzipBytes) {
      yield* streamed(held, serialized);
      return;
    }
  }
  // (On this thread: libuv's thread pool took a fifth of it off the event
  // loop, but the --warc crawl was no faster on 2 cores, 87-97 pages/s
  // either way in alternated runs, and the hand-off costs CPU of its own.)
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

async function wholeMember(w: WarcioParts, record: WARCRecord): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of member(w, record)) chunks.push(c);
  return Buffer.concat(chunks);
}

/** yyyymmddhhmmss, UTC. */
function stamp(d: Date): string {
  return d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
}

/** Splits undici's request header block into a request line and header pairs. */
export function parseRequestHead(head: string): { line: string; headers: [string, string][] } {
  const [line = '', ...rest] = head.split('\r\n');
  const headers: [string, string][] = [];
  for (const h of rest) {
    const i = h.indexOf(':');
    if (i > 0) headers.push([h.slice(0, i), h.slice(i + 1).trim()]);
  }
  return { line, headers };
}

/**
 * One process's WARC files (WARC/1.1, one gzip member per record, so readers
 * can seek): `<arena>-<UTC yyyymmddhhmmss>-<pid>-<seq>.warc.gz` in `dir`,
 * each opened exclusively (never two writers on one file) and opened by a
 * warcinfo record; a new file once one passes `maxBytes`. Records are
 * written one exchange at a time, so a request and its response sit side by
 * side; a crash mid-write tears only the last member.
 */
export class WarcWriter {
  private current: { name: string; handle: FileHandle; bytes: number } | null = null;
  private seq = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly spools: SpoolDir;
  readonly maxBytes: number;

  constructor(private readonly options: WarcWriterOptions) {
    this.maxBytes = options.maxBytes ?? WARC_DEFAULTS.maxBytes;
    this.spools = new SpoolDir(options.dir);
  }

  /** The file being written, if any. */
  get file(): string | null {
    return this.current?.name ?? null;
  }

  /**
   * A request and, when one came, its response, linked both ways by
   * WARC-Concurrent-To. The response body is digested (and spooled past
   * maxMemBytes) as it arrives; the file is taken only once it has ended.
   * Resolves where the response record (else the request record) starts.
   * Any failure is a WEIR_WARC error, and leaves the file as it was before
   * (see appendRecord).
   */
  async writeExchange(sent: SentRequest, response: ReceivedResponse | null): Promise<WarcLocation> {
    const spool = response ? new SpoolBuffer(WARC_DEFAULTS.maxMemBytes, await this.spoolPath()) : undefined;
    try {
      return await this.exchange(sent, response, spool);
    } catch (err) {
      throw isWeirError(err, 'WEIR_WARC') ? err : new WeirError('WEIR_WARC', `archiving ${sent.url} failed: ${(err as Error).message}`, { cause: err });
    } finally {
      await spool?.dispose();
    }
  }

  private async spoolPath(): Promise<string> {
    try {
      return await this.spools.nextPath();
    } catch (err) {
      throw new WeirError('WEIR_WARC', `cannot make a spool directory in ${this.options.dir}: ${(err as Error).message}`, { cause: err });
    }
  }

  private async exchange(sent: SentRequest, response: ReceivedResponse | null, spool: SpoolBuffer | undefined): Promise<WarcLocation> {
    const requestId = `<urn:uuid:${randomUUID()}>`;
    const responseId = `<urn:uuid:${randomUUID()}>`;
    const common = { 'WARC-Date': sent.at.toISOString(), ...(sent.ip ? { 'WARC-IP-Address': sent.ip } : {}) };
    const head = parseRequestHead(sent.head);
    const w = await warcio();
    const request = w.WARCRecord.create(
      {
        url: sent.url,
        type: 'request',
        warcVersion: 'WARC/1.1',
        statusline: head.line,
        httpHeaders: head.headers,
        warcHeaders: { 'WARC-Record-ID': requestId, ...common, ...(response ? { 'WARC-Concurrent-To': responseId } : {}) },
      },
      [],
    );
    const requestBytes = await wholeMember(w, request);
    if (!response) return this.exclusive(() => this.appendRecord(async (put) => put(requestBytes)));
    const record = w.WARCRecord.create(
      {
        url: sent.url,
        type: 'response',
        warcVersion: 'WARC/1.1',
        statusline: response.statusLine,
        httpHeaders: response.headers,
        warcHeaders: { 'WARC-Record-ID': responseId, ...common, 'WARC-Concurrent-To': requestId },
      },
      markTruncation(response, (reason) => record.warcHeaders.headers.set('WARC-Truncated', reason)),
    );
    const chunks = member(w, record, spool);
    try {
      // The first chunk comes once the whole body has been read and digested.
      const first = await chunks.next();
      const at = await this.exclusive(() =>
        this.appendRecord(async (put) => {
          // (One write for both records of a page, whose response is one chunk.)
          await put(...(first.done ? [requestBytes] : [requestBytes, first.value]));
          for (let c = await chunks.next(); !c.done; c = await chunks.next()) await put(c.value);
        }),
      );
      return { file: at.file, offset: at.offset + requestBytes.length };
    } finally {
      // (A record given up half way: its generator's streams are let go now.)
      await chunks.return(undefined).catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    await this.exclusive(async () => {
      this.closed = true;
      await this.current?.handle.close();
      this.current = null;
    });
    await this.spools.remove().catch(() => undefined);
  }

  /** One writer at a time on the file. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Writes one record's members (through `put`) where the file ends, opening
   * a file first when there is none or it is full; resolves where it starts.
   * On any failure the file is cut back to that start, so the next record
   * starts where the output says and the file still reads through; a file
   * that cannot be cut is closed, and the next record begins a new one.
   */
  private async appendRecord(write: (put: (...bytes: Uint8Array[]) => Promise<void>) => Promise<void>): Promise<WarcLocation> {
    if (this.closed) throw new WeirError('WEIR_WARC', 'the WARC writer is closed');
    if (!this.current || this.current.bytes >= this.maxBytes) await this.rotate();
    const cur = this.current as { name: string; handle: FileHandle; bytes: number };
    const start = cur.bytes;
    try {
      await write((...bytes) => this.put(cur, ...bytes));
    } catch (err) {
      await this.cutBack(cur, start);
      throw new WeirError('WEIR_WARC', `writing ${cur.name} failed: ${(err as Error).message}`, { cause: err });
    }
    return { file: cur.name, offset: start };
  }

  /** Appends at the file's counted end (positioned writes: a cut-back file is written from its new end); several parts in one call. */
  private async put(cur: { handle: FileHandle; bytes: number }, ...parts: Uint8Array[]): Promise<void> {
    let bytes = parts[0] ?? new Uint8Array(0);
    if (parts.length > 1) {
      const { bytesWritten } = await cur.handle.writev(parts, cur.bytes);
      cur.bytes += bytesWritten;
      const total = parts.reduce((a, p) => a + p.length, 0);
      if (bytesWritten === total) return;
      // (A short write: the rest as one buffer, from where it stopped.)
      bytes = Buffer.concat(parts).subarray(bytesWritten);
    }
    let done = 0;
    while (done < bytes.length) {
      const { bytesWritten } = await cur.handle.write(bytes, done, bytes.length - done, cur.bytes);
      done += bytesWritten;
      cur.bytes += bytesWritten;
    }
  }

  private async cutBack(cur: { name: string; handle: FileHandle; bytes: number }, start: number): Promise<void> {
    try {
      await cur.handle.truncate(start);
      cur.bytes = start;
    } catch {
      await cur.handle.close().catch(() => undefined);
      if (this.current === cur) this.current = null;
    }
  }

  private async rotate(): Promise<void> {
    await this.current?.handle.close();
    this.current = null;
    const { dir, arena } = this.options;
    try {
      await mkdir(dir, { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new WeirError('WEIR_WARC', `cannot create the WARC directory ${dir}: ${(err as Error).message}`, { cause: err });
    }
    const safeArena = arena.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 100);
    let file: { name: string; handle: FileHandle; bytes: number };
    for (;;) {
      const name = `${safeArena}-${stamp(new Date())}-${process.pid}-${String(this.seq++).padStart(5, '0')}.warc.gz`;
      try {
        // 'wx': created here or not at all (never through a planted link), so two writers never share a file; 0640.
        file = { name, handle: await open(join(dir, name), 'wx', 0o640), bytes: 0 };
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new WeirError('WEIR_WARC', `cannot create a WARC file in ${dir}: ${(err as Error).message}`, { cause: err });
      }
    }
    try {
      await this.put(file, await this.warcinfo(file.name));
    } catch (err) {
      // A file without its warcinfo is no file: gone, and the next record tries a new one.
      await file.handle.close().catch(() => undefined);
      await unlink(join(dir, file.name)).catch(() => undefined);
      throw new WeirError('WEIR_WARC', `writing ${file.name} failed: ${(err as Error).message}`, { cause: err });
    }
    this.current = file;
  }

  private async warcinfo(filename: string): Promise<Uint8Array> {
    const { arena, userAgent, software } = this.options;
    const w = await warcio();
    const info = w.WARCRecord.createWARCInfo(
      { filename, warcVersion: 'WARC/1.1' },
      {
        software: software ?? 'weir',
        format: 'WARC File Format 1.1',
        conformsTo: 'https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/',
        'weir-arena': arena,
        'http-header-user-agent': userAgent,
        robots: 'obey',
        hostname: hostname(),
      },
    );
    return wholeMember(w, info);
  }
}

/**
 * The body, passed through; once it has ended, its truncation (if any) goes
 * into the record's headers, which the serializer writes out only after
 * reading the whole body (that is how it knows the length and digests).
 */
async function* markTruncation(response: ReceivedResponse, mark: (reason: Truncation) => void): AsyncGenerator<Uint8Array> {
  for await (const chunk of response.body) yield chunk;
  const reason = response.truncated();
  if (reason) mark(reason);
}
