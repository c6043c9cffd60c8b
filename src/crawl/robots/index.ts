/** robots.txt: parsed (RFC 9309), cached in Redis, fetched once per origin in a rate slot while the domain waits, and consulted per URL. */
export * from './cache.js';
export * from './fetch.js';
export * from './gate.js';
export * from './parse.js';
export * from './slot.js';
