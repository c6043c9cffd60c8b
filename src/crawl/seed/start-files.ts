import { normalizeUrl } from '../urls/index.js';
import type { Judged, LineJudge } from './line-files.js';

/**
 * A start file's lines (seed startFiles, one URL a line) as what kickoff
 * queues: each normalized, then placed by `place` (kickoff's: the queue it
 * goes to, or why it has none), a batch at a time so places can be looked
 * up in Redis together.
 */
export function startUrlJudge<T>(place: (urls: string[]) => Promise<(T | { bad: string })[]>): LineJudge<T> {
  return async (lines) => {
    const out: Judged<T>[] = [];
    const urls: string[] = [];
    const at: number[] = [];
    lines.forEach((t, i) => {
      const url = normalizeUrl(t);
      if (url) {
        urls.push(url);
        at.push(i);
      }
      out.push(url ? null : { bad: `not an absolute http(s) URL: ${JSON.stringify(t.slice(0, 100))}` });
    });
    const placed = await place(urls);
    at.forEach((i, j) => {
      const p = placed[j] as T | { bad: string };
      out[i] = typeof p === 'object' && p !== null && 'bad' in p ? p : { value: p };
    });
    return out;
  };
}
