/** URLs as the crawler compares them: normalized, matched to a domain key, filtered by RE2 patterns. */
export * from './domains.js';
export * from './normalize.js';
export * from './pattern.js';
