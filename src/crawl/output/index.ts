/** What a crawl leaves behind: one JSON line per URL, and with --warc every exchange in WARC/1.1 files. */
export * from './jsonl.js';
export * from './warc-capture.js';
export * from './warc-writer.js';
