import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2';
import { OpenElements } from './html-tree.js';

/** What a page says about its links. */
export interface PageLinks {
  /** href values of a[href] and area[href], in document order, unresolved. */
  hrefs: string[];
  /** href values of links marked rel=nofollow (kept apart so callers can choose). */
  nofollowHrefs: string[];
  /** The first <base href>, unresolved, or null. */
  base: string | null;
  title: string | null;
  /** <meta name=robots> (or name=<our token>) says nofollow or none. */
  metaNofollow: boolean;
}

const DROPPED_SCHEMES = /^\s*(mailto|javascript|tel|data|about|blob|file|ftp|sms|callto|vbscript):/i;

/** Characters parsed per turn of the event loop by extractLinksAsync. */
export const PARSE_SLICE = 64 * 1024;

/** A range of the markup as text (fetch/page-text.ts pageText: a UTF-8 page is tokenized as its bytes). */
export type TextOf = (start: number, end: number) => string;

/**
 * Collects links with htmlparser2's Tokenizer and the Parser's open-element
 * rules (html-tree.ts), no DOM built, reading attributes only for the few
 * tags that matter (a, area, base, meta, title): about half the CPU of its
 * Parser, with the same answer (a property test checks it against the
 * Parser on random markup).
 *
 * What counts, decided to match what a browser shows a reader: a[href] and
 * area[href] anywhere in the document, including inside <noscript> (it is
 * there for clients without scripts, like a crawler). Nothing from inside
 * <script>, <style>, <textarea>, <iframe> (raw text to a browser) or
 * comments. Links are collected first and resolved by the caller against
 * <base href>, which may come after them.
 */
export function extractLinks(html: string, productToken = 'weir'): PageLinks {
  const run = new TokenRun(html, productToken, Infinity);
  run.step();
  return run.finish();
}

/**
 * The same, letting the event loop in every PARSE_SLICE characters, so a
 * megabyte page does not stall a worker's other fetches (nor delay the send
 * time of their slots) for the whole parse.
 */
export async function extractLinksAsync(html: string, productToken = 'weir', text?: TextOf): Promise<PageLinks> {
  const run = new TokenRun(html, productToken, PARSE_SLICE, text);
  while (!run.step()) await new Promise((r) => setImmediate(r));
  return run.finish();
}

/** What one tag says; true when it opens the page's title. */
function takeTag(out: PageLinks, token: string, name: string, attrs: Record<string, string>): boolean {
  if ((name === 'a' || name === 'area') && typeof attrs.href === 'string') {
    const href = attrs.href.trim();
    if (href === '' || DROPPED_SCHEMES.test(href)) return false;
    const rel = (attrs.rel ?? '').toLowerCase().split(/\s+/);
    (rel.includes('nofollow') ? out.nofollowHrefs : out.hrefs).push(href);
  } else if (name === 'base' && out.base === null && typeof attrs.href === 'string') {
    out.base = attrs.href.trim();
  } else if (name === 'title' && out.title === null) {
    return true;
  } else if (name === 'meta') {
    const metaName = (attrs.name ?? '').toLowerCase();
    if (metaName === 'robots' || metaName === token) {
      const content = (attrs.content ?? '').toLowerCase().split(/[\s,]+/);
      if (content.includes('nofollow') || content.includes('none')) out.metaNofollow = true;
    }
  }
  return false;
}

const cleanTitle = (text: string): string => text.replace(/\s+/g, ' ').trim().slice(0, 1000);

/** Tags whose attributes are read. */
const READ_TAGS = new Set(['a', 'area', 'base', 'meta', 'title']);

/** `html` written whole, the tokenizer paused every `slice` characters; indices are into `html`. */
class TokenRun implements TokenizerCallbacks {
  private readonly out: PageLinks = { hrefs: [], nofollowHrefs: [], base: null, title: null, metaNofollow: false };
  private readonly tokenizer: Tokenizer;
  private readonly token: string;
  private tag = '';
  private reading = false;
  private attrs: Record<string, string> = {};
  private attrName = '';
  private attrValue = '';
  private inTitle = false;
  private titleText = '';
  private nextPause: number;
  private started = false;
  private readonly tree = new OpenElements();

  constructor(
    private readonly html: string,
    productToken: string,
    private readonly slice: number,
    /** `html`[start, end) as text, when `html` is not the text itself (fetch/fetcher.ts pageText: a UTF-8 page's bytes). */
    private readonly text: TextOf = (start, end) => html.slice(start, end),
  ) {
    this.token = productToken.toLowerCase();
    this.nextPause = slice;
    this.tokenizer = new Tokenizer({ decodeEntities: true }, this);
  }

  /** Parses on; true once all of `html` is in (false: paused, call again). */
  step(): boolean {
    if (this.started) this.tokenizer.resume();
    else {
      this.started = true;
      this.tokenizer.write(this.html);
    }
    return this.tokenizer.running;
  }

  finish(): PageLinks {
    this.tokenizer.end();
    if (this.inTitle) this.out.title = cleanTitle(this.titleText);
    return this.out;
  }

  /** Pauses the tokenizer once it has passed the next slice boundary. */
  private progress(index: number): void {
    if (index >= this.nextPause) {
      this.nextPause = index + this.slice;
      this.tokenizer.pause();
    }
  }

  isInForeignContext(): boolean {
    return this.tree.inForeign();
  }

  onopentagname(start: number, end: number): void {
    const opened = this.tree.open(this.html.slice(start, end).toLowerCase());
    if (opened) this.closed(opened.closed);
    this.tag = opened?.name ?? '';
    this.reading = READ_TAGS.has(this.tag);
    if (this.reading) this.attrs = {};
    this.progress(end);
  }

  /** Elements that ended (explicitly or implied): the title's end is where its text stops. */
  private closed(names: string[]): void {
    if (this.inTitle && names.includes('title')) {
      this.inTitle = false;
      this.out.title = cleanTitle(this.titleText);
    }
  }

  onattribname(start: number, end: number): void {
    if (!this.reading) return;
    this.attrName = this.html.slice(start, end).toLowerCase();
    this.attrValue = '';
  }

  onattribdata(start: number, end: number): void {
    if (this.reading) this.attrValue += this.text(start, end);
  }

  onattribentity(codepoint: number): void {
    if (this.reading) this.attrValue += String.fromCodePoint(codepoint);
  }

  onattribend(): void {
    // The first of repeated attributes wins, as in htmlparser2's Parser.
    if (this.reading && !Object.hasOwn(this.attrs, this.attrName)) this.attrs[this.attrName] = this.attrValue;
  }

  onopentagend(): void {
    if (this.reading && takeTag(this.out, this.token, this.tag, this.attrs)) this.inTitle = true;
  }

  onselfclosingtag(): void {
    this.onopentagend();
    this.closed(this.tree.selfClosed(this.tag));
  }

  ontext(start: number, end: number): void {
    if (this.inTitle) this.titleText += this.text(start, end);
    this.progress(end);
  }

  ontextentity(codepoint: number): void {
    if (this.inTitle) this.titleText += String.fromCodePoint(codepoint);
  }

  onclosetag(start: number, end: number): void {
    this.closed(this.tree.close(this.html.slice(start, end).toLowerCase()));
    this.progress(end);
  }

  oncdata(): void {}
  oncomment(): void {}
  ondeclaration(): void {}
  onend(): void {}
  onprocessinginstruction(): void {}
}

const DIRECTIVES_WITH_VALUES = /^(unavailable_after|max-snippet|max-image-preview|max-video-preview)$/i;

/** X-Robots-Tag header values that forbid following links (for any agent, or ours). */
export function headerNofollow(values: string | string[] | undefined, productToken = 'weir'): boolean {
  if (values === undefined) return false;
  for (const value of Array.isArray(values) ? values : [values]) {
    let directives = value;
    // "otherbot: nofollow" applies to otherbot only; a bare directive list to all.
    const m = /^\s*([a-z0-9_-]+)\s*:\s*(.*)$/i.exec(value);
    if (m && !DIRECTIVES_WITH_VALUES.test(m[1] ?? '')) {
      if ((m[1] ?? '').toLowerCase() !== productToken.toLowerCase()) continue;
      directives = m[2] ?? '';
    }
    const list = directives.toLowerCase().split(/[\s,]+/);
    if (list.includes('nofollow') || list.includes('none')) return true;
  }
  return false;
}
