/**
 * Sleeps until `deadline` (performance.now() ms) has really passed. Node's
 * timers are millisecond-grained and measured from a cached loop time, so
 * they often fire early (by up to about a millisecond): a
 * worker that wakes before its slot spends an empty dequeue, and a request
 * sent before its time breaks politeness. This re-arms until it is time.
 */
export async function sleepUntil(deadline: number, signal?: AbortSignal): Promise<void> {
  for (;;) {
    const left = deadline - performance.now();
    if (left <= 0 || signal?.aborted) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const t = setTimeout(done, left);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return sleepUntil(performance.now() + ms, signal);
}
