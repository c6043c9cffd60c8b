/** One lease's life after the queue hands it out: held to its slot and reported (pacer), its response classified, its outcome settled. */
export * from './budget.js';
export * from './classify.js';
export * from './outcome.js';
export * from './pacer.js';
export * from './settle.js';
export * from './site-pace.js';
export * from './pause-broadcast.js';
