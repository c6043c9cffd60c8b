/** Where a request's answer goes: its caller's answers, `at` its place among them. */
interface Answers<Res> {
  resolve(at: number, r: Res): void;
  reject(e: unknown): void;
}

interface Pending<Req, Res> {
  req: Req;
  /** Shared by all the requests of an `addMany` (no closure a request: a kickoff has 20,000 in flight). */
  answers: Answers<Res>;
  at: number;
  /** Who asked: one number for each `add`, one for all the requests of an `addMany` (never split apart). */
  caller: number;
}

/** The answers of an addMany's requests, resolved together once all have come; the first error rejects them. */
class ManyAnswers<Res> implements Answers<Res> {
  private readonly results: Res[];
  private left: number;
  private failed = false;

  constructor(
    n: number,
    private readonly done: (results: Res[]) => void,
    private readonly fail: (e: unknown) => void,
  ) {
    this.results = new Array<Res>(n);
    this.left = n;
  }

  resolve(at: number, r: Res): void {
    this.results[at] = r;
    if (--this.left === 0 && !this.failed) this.done(this.results);
  }

  reject(e: unknown): void {
    if (!this.failed) this.fail(e);
    this.failed = true;
  }
}

/** Weight of the newest gap in a key's mean gap between calls. */
const GAP_WEIGHT = 0.2;

/** The index nearest `mid` where one caller's requests end and another's begin; 0 when the batch is one caller's. */
function callerBoundaryNear(batch: readonly { caller: number }[], mid: number): number {
  const differs = (i: number): boolean => i > 0 && i < batch.length && batch[i]?.caller !== batch[i - 1]?.caller;
  for (let d = 0; d < batch.length; d++) {
    if (differs(mid - d)) return mid - d;
    if (differs(mid + d)) return mid + d;
  }
  return 0;
}

/**
 * Merges calls made in the same turn of the event loop into one batch call.
 * A worker with 64 jobs in flight finishes many of them per socket read;
 * their commits and next dequeues then cost one script call each batch
 * instead of one per job. Calls are flushed on setImmediate (after the I/O
 * that produced them), or at once when a batch is full.
 *
 * With `maxLingerMs`, a batch may also wait for the calls that are about to
 * come: when a key's calls have lately come less than maxLingerMs apart (a
 * mean of the gaps between them), a new batch waits that mean gap before it
 * goes, so it carries about one call more; when they come further apart, it
 * goes at once as above. So a busy worker's calls share script calls (each
 * costs Redis a fixed price, and a wake-up when it was idle) at the price of
 * at most maxLingerMs per call, and an idle one waits for nothing.
 *
 * With `halveFrom`, a batch of that many requests or more from more than
 * one caller goes as two batch calls, its first half then its second, cut
 * between callers: callers that wait for their answer before calling again
 * (64 producers each awaiting its enqueue) get the first half's answers
 * while Redis works on the second, and their next calls form the next batch
 * meanwhile, so this process and Redis work at once instead of by turns.
 * One caller's `addMany` (a crawled page's links, whatever their domains)
 * is never cut: it waits for all its answers anyway.
 */
export class Coalescer<Req, Res> {
  private readonly pending = new Map<string, Pending<Req, Res>[]>();
  /** Per key: when its last call came (ms, monotonic) and the mean gap between its calls. */
  private readonly arrivals = new Map<string, { last: number; gap: number }>();
  private callers = 0;

  constructor(
    private readonly flushBatch: (key: string, reqs: Req[]) => Promise<Res[]>,
    private readonly maxBatch: number,
    private readonly maxLingerMs = 0,
    private readonly halveFrom = Infinity,
  ) {}

  add(key: string, req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => this.push(key, { req, answers: { resolve: (_, r) => resolve(r), reject }, at: 0, caller: this.callers++ }));
  }

  private push(key: string, call: Pending<Req, Res>): void {
    const linger = this.lingerFor(key);
    let batch = this.pending.get(key);
    if (!batch) {
      batch = [];
      this.pending.set(key, batch);
      const b = batch;
      if (linger > 0) setTimeout(() => this.flush(key, b), linger);
      else setImmediate(() => this.flush(key, b));
    }
    batch.push(call);
    if (batch.length >= this.maxBatch) this.flush(key, batch);
  }

  /**
   * Many calls of one key at once, as `add` would take them one by one (in
   * order, sharing batches with other calls), without a promise each: one
   * for all, resolved when every one is answered.
   */
  addMany(key: string, reqs: readonly Req[]): Promise<Res[]> {
    if (reqs.length === 0) return Promise.resolve([]);
    return new Promise<Res[]>((resolve, reject) => {
      // (The batch's own error, passed on as `add` passes it.)
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
      const answers = new ManyAnswers<Res>(reqs.length, resolve, (e) => reject(e));
      const caller = this.callers++;
      for (let i = 0; i < reqs.length; i++) this.push(key, { req: reqs[i] as Req, answers, at: i, caller });
    });
  }

  /** How long a batch opened by a call of `key` now waits for others (0: flushed on setImmediate). */
  private lingerFor(key: string): number {
    if (this.maxLingerMs <= 0) return 0;
    const now = performance.now();
    const a = this.arrivals.get(key);
    if (!a) {
      this.arrivals.set(key, { last: now, gap: Infinity });
      return 0;
    }
    const gap = now - a.last;
    a.gap = Number.isFinite(a.gap) ? a.gap + GAP_WEIGHT * (gap - a.gap) : gap;
    a.last = now;
    return a.gap < this.maxLingerMs ? a.gap : 0;
  }

  /** Sends every batch now, lingering or not (a queue closing keeps no call waiting on a timer). */
  flushAll(): void {
    for (const [key, batch] of [...this.pending]) this.flush(key, batch);
  }

  private flush(key: string, batch: Pending<Req, Res>[]): void {
    if (this.pending.get(key) !== batch) return;
    this.pending.delete(key);
    const cut = batch.length >= this.halveFrom ? callerBoundaryNear(batch, Math.ceil(batch.length / 2)) : 0;
    if (cut > 0) {
      this.send(key, batch.slice(0, cut));
      this.send(key, batch.slice(cut));
    } else this.send(key, batch);
  }

  private send(key: string, batch: Pending<Req, Res>[]): void {
    this.flushBatch(
      key,
      batch.map((p) => p.req),
    ).then(
      (results) => batch.forEach((p, i) => p.answers.resolve(p.at, results[i] as Res)),
      (err: unknown) => batch.forEach((p) => p.answers.reject(err)),
    );
  }
}
