/** The seed file: parsed, validated (every error names its field), stored with the arena. */
export * from './seed.js';
export * from './text.js';
export * from './start-files.js';
