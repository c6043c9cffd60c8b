import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
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
  /** Where the response's WARC record starts, when the crawl keeps WARC files. */
  warc?: WarcLocation | null;
}

/** Appends JSON lines; shared by many processes safely (O_APPEND, whole lines per write). */
export class JsonlWriter {
  private readonly stream: WriteStream;

  constructor(path: string, options: { truncate?: boolean } = {}) {
    this.stream = createWriteStream(path, { flags: options.truncate ? 'w' : 'a' });
  }

  write(record: PageRecord): void {
    this.stream.write(`${JSON.stringify(record)}\n`);
  }

  async close(): Promise<void> {
    this.stream.end();
    await once(this.stream, 'finish');
  }
}
