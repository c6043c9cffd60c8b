import { normalizeToUrl } from '../urls/index.js';
import type { Judged, LineJudge } from './line-files.js';

/**
 * A start file's lines (seed startFiles, one URL a line) as what kickoff
 * queues: each normalized (and parsed, once), then placed by `place`
 * (kickoff's: the queue it goes to, or why it has none), a batch at a time
 * so places can be looked up in Redis together.
 */
export function startUrlJudge<T>(place: (urls: URL[]) => Promise<(T | { bad: string })[]>): LineJudge<T> {
  return async (lines) => {
    const parsed = lines.map((t) => normalizeToUrl(t));
    const urls = parsed.filter((u): u is URL => u !== null);
    const placed = await place(urls);
    let next = 0;
    return parsed.map((u, i): Judged<T> => {
      if (u === null) return { bad: `not an absolute http(s) URL: ${JSON.stringify((lines[i] as string).slice(0, 100))}` };
      const p = placed[next++] as T | { bad: string };
      return typeof p === 'object' && p !== null && 'bad' in p ? p : { value: p };
    });
  };
}
