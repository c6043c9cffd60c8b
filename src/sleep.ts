/**
 * Sleeps until `deadline` (performance.now() ms) has really passed. Node's
 * timers are millisecond-grained and measured from a cached loop time, so
 * they often fire early (by up to about a millisecond): a
 * worker that wakes before its slot spends an empty dequeue, and a request
 * sent before its time breaks politeness. This re-arms until it is time.
 */
export async function sleepUntil(deadline: number, signal?: AbortSignal, lateMs = 0): Promise<void> {
  for (;;) {
    const left = deadline - performance.now();
    if (left <= 0 || signal?.aborted) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      // (`lateMs`: a caller that may wake that much late arms that much
      // later, so that a timer counted from a stale loop time seldom wakes
      // it early only to sleep again: on this project's machine each wake
      // costs a worker 0.2-0.4 ms of CPU, docs/benchmarks.md.)
      const t = setTimeout(done, left + lateMs);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

export function sleep(ms: number, signal?: AbortSignal, lateMs = 0): Promise<void> {
  return sleepUntil(performance.now() + ms, signal, lateMs);
}
