import { Parser } from 'htmlparser2';

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
 * Collects links with htmlparser2's streaming parser, no DOM built.
 *
 * What counts, decided to match what a browser shows a reader: a[href] and
 * area[href] anywhere in the document, including inside <noscript> (it is
 * there for clients without scripts, like a crawler). Nothing from inside
 * <script>, <style>, <textarea>, <iframe> (raw text to a browser) or
 * comments. Links are collected first and resolved by the caller against
 * <base href>, which may come after them.
 */
export function extractLinks(html: string, productToken = 'weir'): PageLinks {
  const run = linkParser(productToken);
  run.parser.write(html);
  return run.finish();
}

/** Bytes parsed per turn of the event loop by extractLinksAsync. */
export const PARSE_SLICE = 64 * 1024;

/**
 * The same, in slices of PARSE_SLICE characters with the event loop let in
 * between, so a megabyte page does not stall a worker's other fetches (nor
 * delay the send time of their slots) for the whole parse.
 */
export async function extractLinksAsync(html: string, productToken = 'weir'): Promise<PageLinks> {
  const run = linkParser(productToken);
  for (let i = 0; i < html.length; i += PARSE_SLICE) {
    run.parser.write(html.slice(i, i + PARSE_SLICE));
    if (i + PARSE_SLICE < html.length) await new Promise((r) => setImmediate(r));
  }
  return run.finish();
}

function linkParser(productToken: string): { parser: Parser; finish: () => PageLinks } {
  const out: PageLinks = { hrefs: [], nofollowHrefs: [], base: null, title: null, metaNofollow: false };
  let inTitle = false;
  let titleText = '';
  const token = productToken.toLowerCase();
  const parser = new Parser(
    {
      onopentag(name, attrs) {
        if ((name === 'a' || name === 'area') && typeof attrs.href === 'string') {
          const href = attrs.href.trim();
          if (href === '' || DROPPED_SCHEMES.test(href)) return;
          const rel = (attrs.rel ?? '').toLowerCase().split(/\s+/);
          (rel.includes('nofollow') ? out.nofollowHrefs : out.hrefs).push(href);
        } else if (name === 'base' && out.base === null && typeof attrs.href === 'string') {
          out.base = attrs.href.trim();
        } else if (name === 'title' && out.title === null) {
          inTitle = true;
        } else if (name === 'meta') {
          const metaName = (attrs.name ?? '').toLowerCase();
          if (metaName === 'robots' || metaName === token) {
            const content = (attrs.content ?? '').toLowerCase().split(/[\s,]+/);
            if (content.includes('nofollow') || content.includes('none')) out.metaNofollow = true;
          }
        }
      },
      ontext(text) {
        if (inTitle) titleText += text;
      },
      onclosetag(name) {
        if (name === 'title' && inTitle) {
          inTitle = false;
          out.title = titleText.replace(/\s+/g, ' ').trim().slice(0, 1000);
        }
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  return {
    parser,
    finish: () => {
      parser.end();
      if (inTitle) out.title = titleText.replace(/\s+/g, ' ').trim().slice(0, 1000);
      return out;
    },
  };
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
