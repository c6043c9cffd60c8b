/** Counting: per-domain tallies in Redis, the per-second history, Prometheus metrics, and the stats the CLI and status page read. */
export * from './add-fields.js';
export * from './history.js';
export * from './metrics.js';
export * from './names.js';
export * from './stats.js';
export * from './tally.js';
