/**
 * robots.txt as RFC 9309 reads it.
 *
 * Parsing: lines of `key: value # comment`, keys case-insensitive. A group
 * is a run of `user-agent` lines and the rules after them; a `user-agent`
 * line after a rule starts a new group. Other lines (`sitemap`, unknown
 * keys, `crawl-delay`) neither start nor end a group (§2.2.4). A user-agent
 * value is matched on its product token: the leading letters, `_` and `-`,
 * case-insensitively (`FOO BAR` and `foo/1.0` both name `foo`). The groups
 * naming our token apply, all of them combined; else the `*` groups; else
 * nothing is disallowed. A UTF-8 byte-order mark at the start, whole or in
 * part, is skipped; one elsewhere makes its line unreadable (as in the
 * reference parser).
 *
 * Matching: `*` matches any run of characters and a final `$` anchors the
 * end; paths and patterns are compared in one percent-encoded form
 * (non-ASCII as UTF-8 escapes, §2.2.2). The most specific rule (the most
 * octets) wins; on a tie, allow. /robots.txt itself is always allowed. The
 * matcher walks pattern positions over the path once: time linear in
 * pattern × path, never a backtracking regular expression (a hostile
 * `/*a*a*a*…b$` costs what its length says).
 *
 * Beyond the RFC, weir follows `Crawl-delay` (seconds; Google ignores it)
 * and does not accept misspelt keys (Google reads `disalow` and friends).
 */

/** Bytes of a robots.txt that are parsed (the RFC asks for at least 500 KiB). */
export const ROBOTS_MAX_BYTES = 512 * 1024;

export interface RobotsRule {
  allow: boolean;
  /** Canonical form (see canonical()). */
  pattern: string;
}

export interface RobotsRules {
  rules: RobotsRule[];
  /** Seconds, from the applying group(s), or null. */
  crawlDelay: number | null;
  /** `Sitemap:` lines (they belong to no group), at most ROBOTS_MAX_SITEMAPS; absent in rules stored before weir read them. */
  sitemaps?: string[];
}

/** Most `Sitemap:` lines taken from one robots.txt. */
export const ROBOTS_MAX_SITEMAPS = 100;

interface Group {
  agents: string[];
  rules: RobotsRule[];
  crawlDelay: number | null;
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/**
 * The form paths and patterns are compared in: escapes of unreserved
 * characters decoded, other escapes' hex uppercased, and characters outside
 * printable ASCII percent-encoded as UTF-8.
 */
export function canonical(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c === '%' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      const ch = String.fromCharCode(parseInt(s.slice(i + 1, i + 3), 16));
      out += UNRESERVED.test(ch) ? ch : `%${s.slice(i + 1, i + 3).toUpperCase()}`;
      i += 2;
    } else if (c.charCodeAt(0) > 0x20 && c.charCodeAt(0) < 0x7f) {
      out += c;
    } else {
      const cp = s.codePointAt(i) ?? 0;
      if (cp > 0xffff) i++;
      for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8')) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return out;
}

/** The product token of a user-agent value, lowercase ('*' for the wildcard, '' for none). */
export function productTokenOf(value: string): string {
  const v = value.trim();
  if (v.startsWith('*')) return '*';
  return (/^[A-Za-z_-]*/.exec(v)?.[0] ?? '').toLowerCase();
}

/** Text of a robots.txt body: a leading UTF-8 BOM, whole or partial, skipped. */
export function robotsText(body: Buffer): string {
  const bom = [0xef, 0xbb, 0xbf];
  let skip = 0;
  while (skip < bom.length && body[skip] === bom[skip]) skip++;
  return body.subarray(skip, ROBOTS_MAX_BYTES).toString('utf8');
}

/**
 * Spaces and tabs only: String.trim would also eat a byte-order mark, which
 * must spoil its line. (A loop: /[ \t]+$/ is quadratic on a long run of spaces.)
 */
function trimSpace(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s[a] === ' ' || s[a] === '\t')) a++;
  while (b > a && (s[b - 1] === ' ' || s[b - 1] === '\t')) b--;
  return s.slice(a, b);
}

/** Parses robots.txt text and picks what applies to `productToken`. */
export function parseRobots(text: string, productToken: string): RobotsRules {
  const token = productToken.toLowerCase();
  const groups: Group[] = [];
  let current: Group | null = null;
  let inAgents = false;
  const sitemaps: string[] = [];
  for (const rawLine of text.slice(0, ROBOTS_MAX_BYTES).split(/\r\n|\r|\n/)) {
    const hash = rawLine.indexOf('#');
    const line = trimSpace(hash >= 0 ? rawLine.slice(0, hash) : rawLine);
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const key = trimSpace(line.slice(0, colon)).toLowerCase();
    const value = trimSpace(line.slice(colon + 1));
    if (key === 'user-agent') {
      if (!current || !inAgents) {
        current = { agents: [], rules: [], crawlDelay: null };
        groups.push(current);
      }
      current.agents.push(productTokenOf(value));
      inAgents = true;
    } else if ((key === 'allow' || key === 'disallow') && current) {
      inAgents = false;
      // An empty disallow allows everything: no rule.
      if (value !== '') current.rules.push({ allow: key === 'allow', pattern: canonical(value.startsWith('/') || value.startsWith('*') ? value : `/${value}`) });
    } else if (key === 'sitemap') {
      if (value !== '' && sitemaps.length < ROBOTS_MAX_SITEMAPS) sitemaps.push(value);
    } else if (key === 'crawl-delay' && current) {
      const d = Number(value);
      if (value !== '' && Number.isFinite(d) && d >= 0) current.crawlDelay = d;
    }
  }
  let applying = groups.filter((g) => g.agents.includes(token));
  if (applying.length === 0) applying = groups.filter((g) => g.agents.includes('*'));
  const delays = applying.map((g) => g.crawlDelay).filter((d): d is number => d !== null);
  return { rules: applying.flatMap((g) => g.rules), crawlDelay: delays.length > 0 ? Math.max(...delays) : null, sitemaps };
}

/**
 * Does `pattern` (canonical, with `*` and a final `$`) match the start of
 * `path` (or all of it, with `$`)? The set of pattern positions reachable
 * after each path character, walked once: O(pattern × path).
 */
export function patternMatches(pattern: string, path: string): boolean {
  const anchored = pattern.endsWith('$');
  const pat = anchored ? pattern.slice(0, -1) : pattern;
  const n = pat.length;
  let live = new Uint8Array(n + 1);
  let next = new Uint8Array(n + 1);
  const close = (set: Uint8Array): void => {
    // A star also matches nothing: the position after it is live too.
    for (let p = 0; p < n; p++) if (set[p] && pat[p] === '*') set[p + 1] = 1;
  };
  live[0] = 1;
  close(live);
  for (let i = 0; i < path.length; i++) {
    if (!anchored && live[n]) return true;
    next.fill(0);
    let any = false;
    for (let p = 0; p < n; p++) {
      if (!live[p]) continue;
      if (pat[p] === '*') next[p] = 1;
      else if (pat[p] === path[i]) next[p + 1] = 1;
      else continue;
      any = true;
    }
    if (!any) return false;
    close(next);
    [live, next] = [next, live];
  }
  return live[n] === 1;
}

/** Answers allow/disallow for URLs of one origin. */
export class RobotsMatcher {
  private readonly rules: RobotsRule[];

  constructor(parsed: RobotsRules) {
    this.rules = parsed.rules;
  }

  /** `pathAndQuery` is the URL's path with its query, as in "/a/b?c=d". */
  isAllowed(pathAndQuery: string): boolean {
    if (pathAndQuery === '/robots.txt') return true;
    const path = canonical(pathAndQuery);
    let best: RobotsRule | null = null;
    for (const r of this.rules) {
      if (best && r.pattern.length < best.pattern.length) continue;
      if (!patternMatches(r.pattern, path)) continue;
      if (!best || r.pattern.length > best.pattern.length || (r.allow && !best.allow)) best = r;
    }
    return best ? best.allow : true;
  }
}
