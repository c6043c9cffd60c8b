/**
 * A fetched body as text: its charset (the header, else a <meta> in its
 * first 1 KiB, else UTF-8), decoded whole (decodeBody) or, for the link
 * extractor, read as bytes with only the ranges it keeps decoded (pageText).
 */

/** Labels that mean UTF-8 (WHATWG Encoding): decoded by V8's own decoder, several times faster than TextDecoder's on Node 20. */
const UTF8_LABELS = new Set(['utf-8', 'utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8']);

/** A body's charset label: from the header, else a <meta> in the first 1 KiB; null when neither says. */
function charsetLabel(body: Buffer, contentType: string | null): string | null {
  const label = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1];
  if (label) return label;
  return /<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_-]+)/i.exec(body.subarray(0, 1024).toString('latin1'))?.[1] ?? null;
}

/** Decodes an HTML body: charset from the header, else a <meta> in the first 1 KiB, else UTF-8; bad bytes become U+FFFD. */
export function decodeBody(body: Buffer, contentType: string | null): string {
  return decodeAs(body, charsetLabel(body, contentType));
}

/** A body in the charset `label` names (UTF-8 when null, or one TextDecoder does not know). */
function decodeAs(body: Buffer, label: string | null): string {
  if (label === null || UTF8_LABELS.has(label.toLowerCase())) return body.toString('utf8', bomLength(body));
  try {
    return new TextDecoder(label).decode(body);
  } catch {
    return body.toString('utf8', bomLength(body));
  }
}

/** A UTF-8 byte-order mark's length (TextDecoder drops it; so does weir). */
const bomLength = (body: Buffer): number => (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0);

/**
 * A page as the link extractor reads it. `markup` is what the tokenizer
 * walks: for UTF-8 (nearly every page) the bytes one character each
 * (latin1), so an index is a byte offset and no page is decoded whole (HTML's
 * syntax is ASCII; a UTF-8 sequence never holds an ASCII byte, so the
 * tokens fall where they would in the text); otherwise the decoded text.
 * `text` decodes a range of it (an href, the title); `whole` the page, on
 * first ask (for a user's onPage hook).
 */
export interface PageText {
  readonly markup: string;
  readonly text: (start: number, end: number) => string;
  readonly whole: () => string;
}

const NON_ASCII = /[\u0080-\u00ff]/;

export function pageText(body: Buffer, contentType: string | null): PageText {
  const label = charsetLabel(body, contentType);
  if (label !== null && !UTF8_LABELS.has(label.toLowerCase())) {
    const decoded = decodeAs(body, label);
    return { markup: decoded, text: (start, end) => decoded.slice(start, end), whole: () => decoded };
  }
  const bom = bomLength(body);
  const markup = body.toString('latin1', bom);
  let whole: string | undefined;
  return {
    markup,
    // (Most ranges are ASCII: the slice is the text.)
    text: (start, end) => {
      const raw = markup.slice(start, end);
      return NON_ASCII.test(raw) ? body.toString('utf8', bom + start, bom + end) : raw;
    },
    whole: () => (whole ??= body.toString('utf8', bom)),
  };
}
