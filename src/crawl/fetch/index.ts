/** One HTTP request with undici, made safe: bounded in time and bytes, decoded, kept off private networks, its connection opened ahead. */
export * from './body.js';
export * from './connector.js';
export * from './errors.js';
export * from './fetcher.js';
export * from './netguard.js';
export * from './page-text.js';
