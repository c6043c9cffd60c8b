/** Politeness per server: the address each host resolves to, shared by every worker, and the queue each URL goes to by it. */
export * from './address-book.js';
export * from './router.js';
