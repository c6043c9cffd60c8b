/** Already seen? The Bloom filter shared in Redis (its parameters and bit positions) and each worker's local filter in front of it. */
export * from './bloom.js';
export * from './local-seen.js';
