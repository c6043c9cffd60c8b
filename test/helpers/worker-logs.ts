/** What the workers said of themselves at exit: their 'worker finished' log lines (pino JSON), summed. */
export interface WorkerCounts {
  pages: number;
  dequeues: number;
  empty: number;
  released: number;
  /** Times a worker's threads slept and woke (voluntary context switches). */
  sleeps: number;
}

export function workerCounts(logText: string): WorkerCounts {
  const sum: WorkerCounts = { pages: 0, dequeues: 0, empty: 0, released: 0, sleeps: 0 };
  for (const line of logText.split('\n')) {
    if (!line.includes('"worker finished"')) continue;
    const s = JSON.parse(line) as { pages: number; dequeues: number; emptyDequeues: number; released: number; sleeps?: number };
    sum.pages += s.pages;
    sum.dequeues += s.dequeues;
    sum.empty += s.emptyDequeues;
    sum.released += s.released;
    sum.sleeps += s.sleeps ?? 0;
  }
  return sum;
}
