/** Revisits: each page fetched again on a schedule learnt from how often it changes, with conditional requests. */
export * from './revisits.js';
export * from './schedule.js';
