/** The seed file: parsed, validated (every error names its field), stored with the arena; its lists kept in files. */
export * from './seed.js';
export * from './text.js';
export * from './line-files.js';
export * from './start-files.js';
export * from './domain-files.js';
