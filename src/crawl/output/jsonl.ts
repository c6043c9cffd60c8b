import { constants, createWriteStream, openSync, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { WeirError } from '../../errors.js';
import type { WarcLocation } from './warc-writer.js';

/** One line of the crawl's output (--out FILE.jsonl), one per URL finished. */
export interface PageRecord {
  url: string;
  domain: string;
  /** Final HTTP status, or null when no response was had (robots, network error). */
  status: number | null;
  contentType: string | null;
  bytes: number;
  depth: number;
  referrer: string | null;
  /** ISO time the fetch finished (worker clock: a record, not a schedule). */
  fetchedAt: string;
  elapsedMs: number;
  title: string | null;
  /** Links found on the page (after within-page dedupe). */
  links: number;
  /** Of those, enqueued now (new, in scope, within depth). */
  enqueued: number;
  /** Where a redirect pointed, when it was one. */
  redirect: string | null;
  attempt: number;
  error: string | null;
  /** For a page listed by a sitemap: its lastmod there. */
  lastmod?: string;
  /** For a sitemap: what it listed (page URLs, child sitemaps), entries ignored, and whether it was cut at 50 MiB. */
  sitemap?: { format: string; urls: number; sitemaps: number; ignored: number; truncated: boolean };
  /** A page that is revisited (seed revisit): which visit this was, what it found, when the next is (null: not again). */
  revisit?: { visit: number; changed: boolean | null; notModified: boolean; nextVisitSeconds: number | null };
  /** Where the response's WARC record starts, when the crawl keeps WARC files. */
  warc?: WarcLocation | null;
}

/**
 * Appends JSON lines; shared by many processes safely (O_APPEND, whole lines
 * per write). The file is never opened through a symbolic link (O_NOFOLLOW:
 * a link planted where the output goes would have it truncate or fill
 * another file), and is created 0640 (URLs crawled are not everyone's).
 */
export class JsonlWriter {
  private readonly stream: WriteStream;

  constructor(path: string, options: { truncate?: boolean } = {}) {
    const { O_WRONLY, O_CREAT, O_APPEND, O_TRUNC, O_NOFOLLOW } = constants;
    let fd: number;
    try {
      fd = openSync(path, O_WRONLY | O_CREAT | O_NOFOLLOW | (options.truncate ? O_TRUNC : O_APPEND), 0o640);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === 'ELOOP' ? 'it is a symbolic link (weir writes only to a regular file it can open without following one)' : ((err as Error).message ?? code);
      throw new WeirError('WEIR_OUTPUT', `cannot open the output ${path}: ${why}`, { cause: err });
    }
    this.stream = createWriteStream('', { fd });
    // A later write error (a full disk) is reported by close(), not left unhandled.
    this.stream.on('error', (err) => (this.failure ??= err));
  }

  private failure: Error | null = null;

  write(record: PageRecord): void {
    this.stream.write(`${JSON.stringify(record)}\n`);
  }

  async close(): Promise<void> {
    if (!this.stream.closed) {
      this.stream.end();
      await once(this.stream, 'close').catch(() => undefined);
    }
    if (this.failure) throw new WeirError('WEIR_OUTPUT', `writing the output failed: ${this.failure.message}`, { cause: this.failure });
  }
}
