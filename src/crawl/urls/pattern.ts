import { RE2JS } from 're2js';

/**
 * A seed's include/exclude pattern, run on URLs a hostile site chooses. It
 * is compiled with re2js (a JavaScript port of RE2): matching takes time
 * linear in the URL, whatever the pattern, so `(a+)+$` on `/aaaa…!` answers
 * at once where JavaScript's backtracking engine would take hours. RE2
 * syntax is JavaScript's without look-around and back-references.
 */
export interface UrlPattern {
  readonly source: string;
  /** Matches anywhere in `url` (use ^ and $ to anchor), like RegExp.test. */
  test(url: string): boolean;
}

/** Compiles a pattern; throws an Error saying why when RE2 cannot run it. */
export function compileUrlPattern(source: string): UrlPattern {
  const re = RE2JS.compile(source);
  return { source, test: (url) => re.test(url) };
}
