interface Pending<Req, Res> {
  req: Req;
  resolve: (r: Res) => void;
  reject: (e: unknown) => void;
}

/**
 * Merges calls made in the same turn of the event loop into one batch call.
 * A worker with 64 jobs in flight finishes many of them per socket read;
 * their commits and next dequeues then cost one script call each batch
 * instead of one per job. Calls are flushed on setImmediate (after the I/O
 * that produced them), or at once when a batch is full.
 */
export class Coalescer<Req, Res> {
  private readonly pending = new Map<string, Pending<Req, Res>[]>();

  constructor(
    private readonly flushBatch: (key: string, reqs: Req[]) => Promise<Res[]>,
    private readonly maxBatch: number,
  ) {}

  add(key: string, req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      let batch = this.pending.get(key);
      if (!batch) {
        batch = [];
        this.pending.set(key, batch);
        setImmediate(() => this.flush(key, batch as Pending<Req, Res>[]));
      }
      batch.push({ req, resolve, reject });
      if (batch.length >= this.maxBatch) this.flush(key, batch);
    });
  }

  private flush(key: string, batch: Pending<Req, Res>[]): void {
    if (this.pending.get(key) !== batch) return;
    this.pending.delete(key);
    this.flushBatch(
      key,
      batch.map((p) => p.req),
    ).then(
      (results) => batch.forEach((p, i) => p.resolve(results[i] as Res)),
      (err: unknown) => batch.forEach((p) => p.reject(err)),
    );
  }
}
