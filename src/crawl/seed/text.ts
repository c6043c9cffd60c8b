/** Reading a seed file's text: size limit, JSON or YAML, duplicate keys refused in both. */

/** Largest seed file weir reads: seeds are configuration, not data. */
export const MAX_SEED_BYTES = 1024 * 1024;

/** A value as a message shows it: numbers as numbers (NaN, Infinity), the rest as JSON. */
export function shown(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (v === undefined) return 'nothing';
  try {
    return JSON.stringify(v) ?? typeof v;
  } catch {
    return typeof v;
  }
}

/**
 * The path of the first key that appears twice in one object of a JSON
 * text ("rateLimits.a.com"), or null. JSON.parse lets the last one win
 * silently; a seed must not. One pass over the text, no regular expressions.
 */
export function duplicateJsonKey(text: string): string | null {
  type Frame = { keys: Set<string> | null; key: string | null };
  const stack: Frame[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      // An unterminated string: not JSON, and JSON.parse says so with its own message.
      if (j >= text.length) return null;
      const top = stack.at(-1);
      if (expectKey && top?.keys) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) return [...stack.slice(0, -1).map((f) => f.key), key].filter((k) => k !== null).join('.');
        top.keys.add(key);
        top.key = key;
        expectKey = false;
      }
      i = j;
    } else if (c === '{') {
      stack.push({ keys: new Set(), key: null });
      expectKey = true;
    } else if (c === '[') {
      stack.push({ keys: null, key: null });
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',') {
      expectKey = stack.at(-1)?.keys !== null && stack.length > 0;
    }
  }
  return null;
}
