/** Counting: per-domain tallies in Redis, the per-second history, Prometheus metrics, and the stats the CLI and status page read. */
export * from './add-fields.js';
export * from './history.js';
// Prometheus metrics load prom-client: only a worker asked to serve them loads it (loadMetrics).
import type * as Metrics from './metrics.js';
export type { CrawlMetrics } from './metrics.js';
export * from './metrics-limits.js';
export const loadMetrics = (): Promise<typeof Metrics> => import('./metrics.js');
export * from './names.js';
export * from './stats.js';
export * from './tally.js';
