/** What the crawl keeps in Redis beside the queue: its key names, locks owned by one holder, notes on why a domain waits. */
export * from './crawl-lock.js';
export * from './item.js';
export * from './keys.js';
export * from './owned-lock.js';
export * from './pause-notes.js';
export * from './faults.js';
export * from './domain-claims.js';
