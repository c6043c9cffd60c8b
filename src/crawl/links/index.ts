/** From a fetched page to queued URLs: extraction, scope, dedupe, sitemaps, and the user's onPage hook. */
export * from './domain-list.js';
export * from './enqueue.js';
export * from './extract.js';
export * from './follow.js';
export * from './html-tree.js';
export * from './on-page.js';
export * from './scope.js';
export * from './sitemap.js';
