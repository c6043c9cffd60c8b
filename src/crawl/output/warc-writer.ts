import { randomUUID } from 'node:crypto';
import { mkdir, open, unlink, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { isWeirError, WeirError } from '../../errors.js';
import { SpoolBuffer, SpoolDir } from './spool.js';
import { member, warcio, wholeMember, WARC_DEFAULTS } from './warc-members.js';
import type { WARCRecord } from 'warcio';

/** Where a record starts: its file (name only, in the WARC directory) and byte offset (the start of its gzip member). */
export interface WarcLocation {
  file: string;
  offset: number;
  /** The record's WARC-Date (a revisit record refers to its capture by URL and this). */
  date?: string;
  /** Its WARC-Payload-Digest (a later identical payload is archived as a revisit of it). */
  payloadDigest?: string;
}

export { WARC_DEFAULTS } from './warc-members.js';

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
  /** A 304 to a revisit's conditional request: written as a revisit record (profile server-not-modified) referring to the capture it confirms. */
  notModified?: RevisitOf | undefined;
  /** A revisit's 2xx: when its payload digest is this capture's, written as a revisit record (profile identical-payload-digest) instead of a copy. */
  sameAs?: RevisitOf | undefined;
}

/** The capture a revisit refers to: its URL, when it was fetched, and its payload digest when known. */
export interface RevisitOf {
  uri: string;
  date: Date;
  payloadDigest?: string | undefined;
}

/** WARC 1.1's profile for a revisit the server answered 304 (WARC 1.1 §6.7.2). */
const SERVER_NOT_MODIFIED = 'http://netpreserve.org/warc/1.1/revisit/server-not-modified';

export interface WarcWriterOptions {
  dir: string;
  arena: string;
  userAgent: string;
  maxBytes?: number;
  /** A body past this many bytes is spooled to a file (default WARC_DEFAULTS.maxMemBytes). */
  maxMemBytes?: number;
  software?: string;
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
    const spool = response ? new SpoolBuffer(this.options.maxMemBytes ?? WARC_DEFAULTS.maxMemBytes, await this.spoolPath()) : undefined;
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
    const request = httpRecord(w, { url: sent.url, type: 'request', statusline: head.line, httpHeaders: head.headers, warcHeaders: { 'WARC-Record-ID': requestId, ...common, ...(response ? { 'WARC-Concurrent-To': responseId } : {}) } }, []);
    const requestBytes = await wholeMember(w, request);
    if (!response) return this.exclusive(() => this.appendRecord(async (put) => put(requestBytes)));
    const revisit = response.notModified;
    const headers = { 'WARC-Record-ID': responseId, ...common, 'WARC-Concurrent-To': requestId };
    const answer = { url: sent.url, statusline: response.statusLine, httpHeaders: response.headers };
    const record = httpRecord(w, { ...answer, type: revisit ? 'revisit' : 'response', warcHeaders: headers, refersTo: revisit }, markTruncation(response, (reason) => record.warcHeaders.headers.set('WARC-Truncated', reason)));
    // (warcio names the identical-payload-digest profile for every revisit.)
    if (revisit) record.warcHeaders.headers.set('WARC-Profile', SERVER_NOT_MODIFIED);
    const chunks = member(w, record, spool);
    try {
      // The first chunk comes once the whole body has been read and digested.
      const first = await chunks.next();
      const digest = record.warcHeaders.headers.get('WARC-Payload-Digest') ?? undefined;
      const located = (at: WarcLocation): WarcLocation => ({ file: at.file, offset: at.offset + requestBytes.length, date: common['WARC-Date'], ...(digest && !revisit ? { payloadDigest: digest } : {}) });
      const same = response.sameAs;
      if (same?.payloadDigest !== undefined && digest === same.payloadDigest) {
        // The payload archived before: its headers and a reference, not a second copy (profile identical-payload-digest).
        const again = httpRecord(w, { ...answer, type: 'revisit', warcHeaders: { ...headers, 'WARC-Payload-Digest': digest }, refersTo: same }, []);
        const bytes = await wholeMember(w, again);
        return located(await this.exclusive(() => this.appendRecord(async (put) => put(requestBytes, bytes))));
      }
      const at = await this.exclusive(() =>
        this.appendRecord(async (put) => {
          // (One write for both records of a page, whose response is one chunk.)
          await put(...(first.done ? [requestBytes] : [requestBytes, first.value]));
          for (let c = await chunks.next(); !c.done; c = await chunks.next()) await put(c.value);
        }),
      );
      return located(at);
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

/** A WARC/1.1 record of an HTTP message; its WARC-Date is warcHeaders' (warcio would set the time it is made). */
function httpRecord(
  w: Awaited<ReturnType<typeof warcio>>,
  r: { url: string; type: 'request' | 'response' | 'revisit'; statusline: string; httpHeaders: [string, string][]; warcHeaders: Record<string, string>; refersTo?: RevisitOf | undefined },
  body: Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
): WARCRecord {
  const { refersTo, ...fields } = r;
  return w.WARCRecord.create(
    { ...fields, date: r.warcHeaders['WARC-Date'], warcVersion: 'WARC/1.1', ...(refersTo ? { refersToUrl: refersTo.uri, refersToDate: refersTo.date.toISOString() } : {}) },
    body as AsyncIterable<Uint8Array>,
  );
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
