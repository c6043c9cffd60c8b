/**
 * robots.txt as RFC 9309 says: groups of user-agent lines with allow and
 * disallow rules; the group whose product token matches ours (case-
 * insensitively) applies, all such groups combined, else the "*" group(s),
 * else nothing is disallowed. The most specific (longest) matching rule
 * wins; on a tie, allow wins. "*" matches any run of characters and a final
 * "$" anchors the end. /robots.txt itself is always allowed. Crawl-delay (not
 * in the RFC, but widely used) is read from the applying group(s).
 */

/** Bytes of a robots.txt that are parsed (the RFC asks for at least 500 KiB). */
export const ROBOTS_MAX_BYTES = 512 * 1024;

interface Rule {
  allow: boolean;
  pattern: string;
  regex: RegExp | null;
}

interface Group {
  agents: string[];
  rules: Rule[];
  crawlDelay: number | null;
}

export interface RobotsRules {
  rules: { allow: boolean; pattern: string }[];
  /** Seconds, from the applying group, or null. */
  crawlDelay: number | null;
}

const unreserved = /%(2[DdEe]|3[0-9]|4[1-9A-Fa-f]|5[0-9Aa]|5[Ff]|6[1-9A-Fa-f]|7[0-9Aa]|7[Ee])/g;

/** Percent-escapes of unreserved characters decoded, others' hex uppercased: the form URLs are compared in. */
function canon(s: string): string {
  return s.replace(unreserved, (m) => String.fromCharCode(parseInt(m.slice(1), 16))).replace(/%[0-9a-f]{2}/g, (m) => m.toUpperCase());
}

function compile(pattern: string): RegExp | null {
  if (!pattern.includes('*') && !pattern.endsWith('$')) return null;
  const anchored = pattern.endsWith('$');
  const body = (anchored ? pattern.slice(0, -1) : pattern)
    .split('*')
    .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}${anchored ? '$' : ''}`);
}

function matches(rule: Rule, path: string): boolean {
  return rule.regex ? rule.regex.test(path) : path.startsWith(rule.pattern);
}

/** Parses robots.txt text and picks what applies to `productToken`. */
export function parseRobots(text: string, productToken: string): RobotsRules {
  const token = productToken.toLowerCase();
  const groups: Group[] = [];
  let current: Group | null = null;
  let lastWasAgent = false;
  for (const rawLine of text.slice(0, ROBOTS_MAX_BYTES).split(/\r\n|\r|\n/)) {
    const line = rawLine.replace(/#.*$/, '').trim();
    const m = /^([A-Za-z-]+)\s*:\s*(.*)$/.exec(line);
    if (!m) continue;
    const key = (m[1] ?? '').toLowerCase();
    const value = (m[2] ?? '').trim();
    if (key === 'user-agent') {
      if (!current || !lastWasAgent) {
        current = { agents: [], rules: [], crawlDelay: null };
        groups.push(current);
      }
      current.agents.push(value.toLowerCase().split('/')[0]?.trim() ?? '');
      lastWasAgent = true;
      continue;
    }
    lastWasAgent = false;
    if (!current) continue;
    if (key === 'allow' || key === 'disallow') {
      if (value === '') continue; // an empty disallow allows everything: no rule
      const pattern = canon(value.startsWith('/') || value.startsWith('*') ? value : `/${value}`);
      current.rules.push({ allow: key === 'allow', pattern, regex: compile(pattern) });
    } else if (key === 'crawl-delay') {
      const d = Number(value);
      if (Number.isFinite(d) && d >= 0) current.crawlDelay = d;
    }
  }
  let applying = groups.filter((g) => g.agents.includes(token));
  if (applying.length === 0) applying = groups.filter((g) => g.agents.includes('*'));
  const delays = applying.map((g) => g.crawlDelay).filter((d): d is number => d !== null);
  return {
    rules: applying.flatMap((g) => g.rules.map((r) => ({ allow: r.allow, pattern: r.pattern }))),
    crawlDelay: delays.length > 0 ? Math.max(...delays) : null,
  };
}

/** Answers allow/disallow for URLs of one origin. */
export class RobotsMatcher {
  private readonly rules: Rule[];

  constructor(parsed: RobotsRules) {
    this.rules = parsed.rules.map((r) => ({ ...r, regex: compile(r.pattern) }));
  }

  /** `pathAndQuery` is the URL's path with its query, as in "/a/b?c=d". */
  isAllowed(pathAndQuery: string): boolean {
    if (pathAndQuery === '/robots.txt') return true;
    const path = canon(pathAndQuery);
    let best: Rule | null = null;
    for (const r of this.rules) {
      if (!matches(r, path)) continue;
      if (!best || r.pattern.length > best.pattern.length || (r.pattern.length === best.pattern.length && r.allow && !best.allow)) {
        best = r;
      }
    }
    return best ? best.allow : true;
  }
}
