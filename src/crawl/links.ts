import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2';

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

/**
 * Collects links with htmlparser2's tokenizer, no DOM and no parser built:
 * attributes are gathered only for the few tags that matter (a, area, base,
 * meta, title), so a page costs about half of what htmlparser2's Parser
 * costs (bench:crawl). The tokenizer itself decides what is raw text.
 *
 * What counts, decided to match what a browser shows a reader: a[href] and
 * area[href] anywhere in the document, including inside <noscript> (it is
 * there for clients without scripts, like a crawler). Nothing from inside
 * <script>, <style>, <textarea>, <iframe> (raw text to a browser) or
 * comments. Links are collected first and resolved by the caller against
 * <base href>, which may come after them.
 */
export function extractLinks(html: string, productToken = 'weir'): PageLinks {
  const scan = new LinkScanner(html, productToken, Infinity);
  scan.tokenizer.write(html);
  return scan.finish();
}

/** Characters tokenized per turn of the event loop by extractLinksAsync. */
export const PARSE_SLICE = 64 * 1024;

/**
 * The same, pausing every PARSE_SLICE characters to let the event loop in,
 * so a megabyte page does not stall a worker's other fetches (nor delay the
 * send time of their slots) for the whole parse.
 */
export async function extractLinksAsync(html: string, productToken = 'weir'): Promise<PageLinks> {
  const scan = new LinkScanner(html, productToken, PARSE_SLICE);
  scan.tokenizer.write(html);
  while (!scan.tokenizer.running) {
    await new Promise((r) => setImmediate(r));
    scan.resume();
  }
  return scan.finish();
}

/** Tags whose attributes are read. */
const READ_TAGS = new Set(['a', 'area', 'base', 'meta', 'title']);
/** SVG and MathML: inside them <script>, <style>, <iframe>… are not raw text (as htmlparser2's Parser tells its tokenizer). */
const FOREIGN = new Set(['svg', 'math']);
/** Elements inside SVG/MathML whose content is HTML again. */
const INTEGRATION = new Set(['mi', 'mo', 'mn', 'ms', 'mtext', 'annotation-xml', 'foreignobject', 'desc', 'title']);

/** Tokenizer callbacks that keep only what PageLinks needs; indices are into `html`, written whole. */
class LinkScanner implements TokenizerCallbacks {
  readonly out: PageLinks = { hrefs: [], nofollowHrefs: [], base: null, title: null, metaNofollow: false };
  readonly tokenizer: Tokenizer;
  private tag = '';
  private reading = false;
  private attrs: Record<string, string> = {};
  private attrName = '';
  private attrValue = '';
  private inTitle = false;
  private titleText = '';
  private nextPause: number;
  private readonly token: string;
  /** Open svg/math elements and integration points within them, innermost first. */
  private readonly foreign: string[] = [];

  constructor(
    private readonly html: string,
    productToken: string,
    private readonly slice: number,
  ) {
    this.token = productToken.toLowerCase();
    this.nextPause = slice;
    this.tokenizer = new Tokenizer({ decodeEntities: true }, this);
  }

  resume(): void {
    this.tokenizer.resume();
  }

  finish(): PageLinks {
    this.tokenizer.end();
    if (this.inTitle) this.endTitle();
    return this.out;
  }

  /** Pauses the tokenizer once it has passed the next slice boundary. */
  private progress(index: number): void {
    if (index >= this.nextPause) {
      this.nextPause = index + this.slice;
      this.tokenizer.pause();
    }
  }

  onopentagname(start: number, end: number): void {
    this.tag = this.html.slice(start, end).toLowerCase();
    this.reading = READ_TAGS.has(this.tag);
    if (this.reading) this.attrs = {};
    if (FOREIGN.has(this.tag) || (this.foreign.length > 0 && INTEGRATION.has(this.tag))) this.foreign.unshift(this.tag);
    this.progress(end);
  }

  isInForeignContext(): boolean {
    const top = this.foreign[0];
    return top !== undefined && FOREIGN.has(top);
  }

  onattribname(start: number, end: number): void {
    if (!this.reading) return;
    this.attrName = this.html.slice(start, end).toLowerCase();
    this.attrValue = '';
  }

  onattribdata(start: number, end: number): void {
    if (this.reading) this.attrValue += this.html.slice(start, end);
  }

  onattribentity(codepoint: number): void {
    if (this.reading) this.attrValue += String.fromCodePoint(codepoint);
  }

  onattribend(): void {
    // The first of repeated attributes wins, as in htmlparser2's Parser.
    if (this.reading && !Object.hasOwn(this.attrs, this.attrName)) this.attrs[this.attrName] = this.attrValue;
  }

  onopentagend(): void {
    if (this.reading) this.openTag(this.tag, this.attrs);
  }

  onselfclosingtag(): void {
    this.onopentagend();
    // <svg/> inside foreign content closes itself at once.
    if (this.isInForeignContext() && this.foreign[0] === this.tag) this.foreign.shift();
  }

  private openTag(name: string, attrs: Record<string, string>): void {
    if ((name === 'a' || name === 'area') && typeof attrs.href === 'string') {
      const href = attrs.href.trim();
      if (href === '' || DROPPED_SCHEMES.test(href)) return;
      const rel = (attrs.rel ?? '').toLowerCase().split(/\s+/);
      (rel.includes('nofollow') ? this.out.nofollowHrefs : this.out.hrefs).push(href);
    } else if (name === 'base' && this.out.base === null && typeof attrs.href === 'string') {
      this.out.base = attrs.href.trim();
    } else if (name === 'title' && this.out.title === null) {
      this.inTitle = true;
    } else if (name === 'meta') {
      const metaName = (attrs.name ?? '').toLowerCase();
      if (metaName === 'robots' || metaName === this.token) {
        const content = (attrs.content ?? '').toLowerCase().split(/[\s,]+/);
        if (content.includes('nofollow') || content.includes('none')) this.out.metaNofollow = true;
      }
    }
  }

  ontext(start: number, end: number): void {
    if (this.inTitle) this.titleText += this.html.slice(start, end);
    this.progress(end);
  }

  ontextentity(codepoint: number): void {
    if (this.inTitle) this.titleText += String.fromCodePoint(codepoint);
  }

  onclosetag(start: number, end: number): void {
    const name = this.html.slice(start, end).toLowerCase();
    if (this.inTitle && name === 'title') this.endTitle();
    const open = this.foreign.indexOf(name);
    if (open !== -1) this.foreign.splice(0, open + 1);
    this.progress(end);
  }

  private endTitle(): void {
    this.inTitle = false;
    this.out.title = this.titleText.replace(/\s+/g, ' ').trim().slice(0, 1000);
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
