import { Parser } from 'htmlparser2';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip, type Gunzip } from 'node:zlib';

/** The sitemaps protocol's limits (sitemaps.org), and how deep weir follows index files. */
export const SITEMAP_LIMITS = {
  /** URLs (or child sitemaps) taken from one file; the rest are ignored and counted. */
  maxEntries: 50_000,
  /** Uncompressed bytes read of one file; the rest is not read. */
  maxBytes: 50 * 1024 * 1024,
  /** Sitemap index files followed below a listed sitemap (an index listing an index listing an index). */
  maxNesting: 3,
  /** Longest <loc> or line taken (the protocol's limit is 2,048 characters). */
  maxUrlChars: 2048,
} as const;

export interface SitemapEntry {
  loc: string;
  lastmod: string | null;
}

export interface SitemapContents {
  format: 'urlset' | 'sitemapindex' | 'text' | 'unknown';
  /** Page URLs listed (a urlset, or a text sitemap). */
  urls: SitemapEntry[];
  /** Child sitemaps listed (a sitemapindex). */
  sitemaps: SitemapEntry[];
  /** Entries past maxEntries, and <loc>s or lines too long to be URLs. */
  ignored: number;
  /** The file was cut at maxBytes uncompressed (a gzip bomb, an endless body). */
  truncated: boolean;
  /** The gzip layer was corrupt: what came before it is kept. */
  error: string | null;
}

const GZIP_MAGIC = [0x1f, 0x8b];
const BOM = [0xef, 0xbb, 0xbf];

/** Where the first byte after a byte-order mark and white space is; -1 while `head` could still be all of those. */
function firstSignificant(head: Buffer): number {
  let i = 0;
  while (i < BOM.length && i < head.length && head[i] === BOM[i]) i++;
  if (i < BOM.length && i === head.length) return -1;
  if (i < BOM.length) i = 0;
  while (i < head.length && (head[i] === 0x20 || head[i] === 0x09 || head[i] === 0x0a || head[i] === 0x0d)) i++;
  return i === head.length ? -1 : i;
}

/**
 * Reads a sitemap as it streams, in bounded memory: gzip (by its magic
 * bytes, whatever the headers say) undone with the uncompressed size capped,
 * then XML (`urlset`, `sitemapindex`; htmlparser2 in XML mode, which never
 * expands DTD entities, so a "billion laughs" file is just text) or a plain
 * text sitemap (one URL per line). Only the entries are kept, at most
 * maxEntries, each at most maxUrlChars.
 */
export class SitemapReader {
  private readonly result: SitemapContents = { format: 'unknown', urls: [], sitemaps: [], ignored: 0, truncated: false, error: null };
  private sniffed: Buffer = Buffer.alloc(0);
  /** Uncompressed bytes held until the format is known. */
  private head: Buffer = Buffer.alloc(0);
  private gunzip: Gunzip | null = null;
  private gunzipDone: Promise<void> | null = null;
  private bytes = 0;
  private consumer: ((chunk: Buffer) => void) | null = null;
  private finishConsumer: (() => void) | null = null;

  /** Feeds body bytes; false once no more are wanted. */
  write(chunk: Buffer): boolean {
    if (this.full) return false;
    if (!this.consumer && !this.gunzip) {
      this.sniffed = Buffer.concat([this.sniffed, chunk]);
      if (this.sniffed.length < 2) return true;
      const data = this.sniffed;
      this.sniffed = Buffer.alloc(0);
      if (data[0] === GZIP_MAGIC[0] && data[1] === GZIP_MAGIC[1]) this.startGunzip();
      return this.route(data);
    }
    return this.route(chunk);
  }

  /** Everything was written: the entries read. */
  async end(): Promise<SitemapContents> {
    if (this.sniffed.length > 0) this.route(this.sniffed);
    if (this.gunzip) {
      this.gunzip.end();
      await this.gunzipDone;
    }
    if (!this.consumer && this.head.length > 0) {
      this.text();
      this.feed(this.head);
    }
    this.finishConsumer?.();
    return this.result;
  }

  private get full(): boolean {
    return this.result.truncated;
  }

  private route(chunk: Buffer): boolean {
    if (this.gunzip) {
      if (!this.gunzip.destroyed) this.gunzip.write(chunk);
      return !this.full;
    }
    this.plain(chunk);
    return !this.full;
  }

  private startGunzip(): void {
    const gunzip = createGunzip();
    this.gunzip = gunzip;
    this.gunzipDone = new Promise<void>((resolve) => {
      gunzip.on('data', (d: Buffer) => this.plain(d));
      gunzip.on('end', resolve);
      gunzip.on('close', resolve);
      gunzip.on('error', (e) => {
        this.result.error ??= `gzip: ${e.message}`;
        resolve();
      });
    });
  }

  /** Uncompressed bytes: counted against maxBytes, then parsed. */
  private plain(chunk: Buffer): void {
    if (this.full) return;
    const room = SITEMAP_LIMITS.maxBytes - this.bytes;
    if (chunk.length > room) {
      chunk = chunk.subarray(0, room);
      this.result.truncated = true;
      this.gunzip?.destroy();
    }
    this.bytes += chunk.length;
    if (this.consumer) {
      this.consumer(chunk);
      return;
    }
    this.head = Buffer.concat([this.head, chunk]);
    const at = firstSignificant(this.head);
    if (at === -1 && this.head.length < 4096) return;
    if (this.head[at] === 0x3c) this.xml();
    else this.text();
    const head = this.head;
    this.head = Buffer.alloc(0);
    this.feed(head);
  }

  private feed(chunk: Buffer): void {
    this.consumer?.(chunk);
  }

  private add(list: SitemapEntry[], loc: string, lastmod: string | null): void {
    const url = loc.trim();
    if (url === '') return;
    if (url.length > SITEMAP_LIMITS.maxUrlChars || this.result.urls.length + this.result.sitemaps.length >= SITEMAP_LIMITS.maxEntries) {
      this.result.ignored++;
      return;
    }
    list.push({ loc: url, lastmod: lastmod?.trim().slice(0, 64) || null });
  }

  private xml(): void {
    let entry: 'url' | 'sitemap' | null = null;
    let field: 'loc' | 'lastmod' | null = null;
    let loc = '';
    let lastmod = '';
    const local = (name: string): string => name.slice(name.indexOf(':') + 1).toLowerCase();
    const parser = new Parser(
      {
        onopentag: (name) => {
          const n = local(name);
          if (n === 'urlset' || n === 'sitemapindex') this.result.format = n;
          if (n === 'url' || n === 'sitemap') {
            entry = n;
            loc = '';
            lastmod = '';
          } else if (entry && (n === 'loc' || n === 'lastmod')) field = n;
        },
        ontext: (text) => {
          // Bounded: a loc longer than a URL may be is dropped, not gathered.
          if (field === 'loc' && loc.length <= SITEMAP_LIMITS.maxUrlChars) loc += text;
          else if (field === 'lastmod' && lastmod.length <= 64) lastmod += text;
        },
        onclosetag: (name) => {
          const n = local(name);
          if (n === 'loc' || n === 'lastmod') field = null;
          else if (n === entry) {
            this.add(entry === 'url' ? this.result.urls : this.result.sitemaps, loc, lastmod);
            entry = null;
          }
        },
      },
      { xmlMode: true, decodeEntities: true },
    );
    const decoder = new StringDecoder('utf8');
    this.consumer = (chunk) => parser.write(decoder.write(chunk));
    this.finishConsumer = () => parser.end(decoder.end());
  }

  private text(): void {
    this.result.format = 'text';
    const max = SITEMAP_LIMITS.maxUrlChars;
    const decoder = new StringDecoder('utf8');
    let line = '';
    // A line is gathered up to one character past the limit: enough to know it is too long.
    const append = (piece: string): void => {
      if (line.length <= max) line += piece.slice(0, max + 1 - line.length);
    };
    const take = (): void => {
      const l = line.replace(/^\uFEFF/, '').trim();
      line = '';
      if (/^https?:\/\//i.test(l)) this.add(this.result.urls, l, null);
      else if (l.length > max) this.result.ignored++;
    };
    this.consumer = (chunk) => {
      const s = decoder.write(chunk);
      let from = 0;
      for (let nl = s.indexOf('\n'); nl >= 0; nl = s.indexOf('\n', from)) {
        append(s.slice(from, nl));
        take();
        from = nl + 1;
      }
      append(s.slice(from));
    };
    this.finishConsumer = () => {
      append(decoder.end());
      take();
    };
  }
}
