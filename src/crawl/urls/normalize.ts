/** Longest URL weir keeps; longer ones are skipped (and counted) as malformed. */
export const MAX_URL_LENGTH = 8192;

// RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~"
const isUnreserved = (c: number): boolean =>
  (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2e || c === 0x5f || c === 0x7e;

/** Decodes percent-escapes of unreserved characters and uppercases the hex of the others. */
function normalizeEscapes(s: string): string {
  if (!s.includes('%')) return s;
  return s.replace(/%([0-9a-fA-F]{2})/g, (_m, hex: string) => {
    const c = parseInt(hex, 16);
    return isUnreserved(c) ? String.fromCharCode(c) : `%${hex.toUpperCase()}`;
  });
}

/**
 * The one URL form weir queues, dedupes and compares: absolute http(s),
 * lowercase scheme and host (IDN as punycode), default port dropped,
 * fragment and credentials dropped, dot-segments resolved, percent-escapes
 * of unreserved characters decoded and other escapes in uppercase hex, an
 * empty path as "/", the query kept as it is (order matters to servers).
 * Returns null for anything else (never throws); idempotent.
 */
export function normalizeUrl(input: string, base?: string | URL): string | null {
  return normalizeToUrl(input, base)?.href ?? null;
}

/** normalizeUrl, returning the parsed URL (its href is the normal form) so callers need not parse it again. */
export function normalizeToUrl(input: string, base?: string | URL): URL | null {
  if (typeof input !== 'string' || input.length > MAX_URL_LENGTH) return null;
  let u: URL;
  try {
    u = base === undefined ? new URL(input) : new URL(input, base);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  if (u.hostname === '') return null;
  // Host names as DNS has them (letters, digits, '-', '_', '.'; IDNs are punycode by now) or IP
  // literals. WHATWG URLs also admit characters such as '{' or '!' in a host: no DNS name has them.
  if (!/^([a-z0-9_-]+\.)*[a-z0-9_-]+\.?$/.test(u.hostname) && !/^\[[0-9a-f:.]+\]$/.test(u.hostname)) return null;
  // (An empty fragment, "x#", reads as hash '' but still shows in href.)
  if (u.hash !== '' || u.href.endsWith('#')) u.hash = '';
  if (u.username !== '' || u.password !== '') {
    u.username = '';
    u.password = '';
  }
  if (u.pathname.includes('%') || u.search.includes('%')) {
    u.pathname = normalizeEscapes(u.pathname);
    if (u.search !== '') u.search = normalizeEscapes(u.search);
    // One more pass settles what the setters re-encoded, so the result is a fixed point.
    u = new URL(u.href);
    u.pathname = normalizeEscapes(u.pathname);
    if (u.search !== '') u.search = normalizeEscapes(u.search);
  }
  if (u.href.length > MAX_URL_LENGTH) return null;
  return u;
}

/** The origin robots.txt belongs to: scheme, host and port. */
export function originOf(url: string | URL): string {
  return (typeof url === 'string' ? new URL(url) : url).origin;
}
