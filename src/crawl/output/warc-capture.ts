import type { RevisitOf, Truncation, WarcLocation, WarcWriter } from './warc-writer.js';

/** Chunks handed from the socket to the WARC serializer as they arrive. */
class ChunkChannel implements AsyncIterable<Uint8Array> {
  private readonly chunks: Uint8Array[] = [];
  private ended = false;
  private wake: (() => void) | null = null;

  push(chunk: Uint8Array): void {
    if (this.ended) return;
    this.chunks.push(chunk);
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    for (;;) {
      const next = this.chunks.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((r) => (this.wake = r));
      this.wake = null;
    }
  }
}

/** undici's raw header list (name, value, name, value…) as pairs, bytes kept (latin1). */
function headerPairs(raw: Buffer[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([(raw[i] as Buffer).toString('latin1'), (raw[i + 1] as Buffer).toString('latin1')]);
  return pairs;
}

/**
 * One HTTP exchange on its way into a WARC file: what undici wrote (its
 * header block and the peer's address), the status line and headers it
 * read, and the body as received (before content-decoding), chunk by chunk.
 * `finish` ends it, with why the body was cut if it was, and resolves where
 * its response record starts. A request never sent leaves no record.
 */
export class ExchangeCapture {
  private sent: { head: string; ip: string | null; at: Date } | null = null;
  private body: ChunkChannel | null = null;
  private written: Promise<WarcLocation> | null = null;
  private cut: Truncation | null = null;

  constructor(
    readonly url: string,
    private readonly writer: WarcWriter,
    /** For a revisit's conditional request: the capture a 304 confirms. */
    private readonly revisitOf?: RevisitOf,
  ) {}

  onSent(head: string, ip: string | null): void {
    this.sent = { head, ip, at: new Date() };
  }

  /** The final response's head (interim 1xx responses are not passed here); `version` as "1.1". */
  onResponse(version: string, statusCode: number, statusText: string, rawHeaders: Buffer[]): void {
    if (!this.sent || this.body) return;
    this.body = new ChunkChannel();
    this.written = this.writer.writeExchange(
      { url: this.url, ...this.sent },
      {
        statusLine: `HTTP/${version} ${statusCode} ${statusText}`.trimEnd(),
        headers: headerPairs(rawHeaders),
        body: this.body,
        truncated: () => this.cut,
        notModified: statusCode === 304 ? this.revisitOf : undefined,
        sameAs: statusCode >= 200 && statusCode < 300 ? this.revisitOf : undefined,
      },
    );
    // Awaited by finish(); until then a failure must not be an unhandled rejection.
    this.written.catch(() => undefined);
  }

  /**
   * Hands a raw body chunk (as the server sent it, before any decoding) to
   * this capture. The fetcher calls it for each chunk it reads, or from a
   * 'data' listener beside the decoders' pipe: no stream of its own between
   * the socket and the reader (a Transform there cost some 0.5 ms a page).
   */
  readonly take = (chunk: Buffer): void => {
    this.body?.push(chunk);
  };

  /** Ends the exchange; null when nothing was sent. */
  async finish(cut: Truncation | null): Promise<WarcLocation | null> {
    if (!this.sent) return null;
    if (!this.body || !this.written) return this.writer.writeExchange({ url: this.url, ...this.sent }, null);
    this.cut = cut;
    this.body.end();
    return this.written;
  }
}
