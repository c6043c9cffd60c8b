// Preloaded (node --import) into a worker process to make it a deliberately
// late sender: its event loop is blocked for 100 ms right before every second
// request's headers are written (this subscriber runs before weir's own send
// gate, which subscribes later), and for 100 ms after every third response's
// headers arrive. Counts what it did in LATE_SENDER_LOG if set.
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';

const block = (ms) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};
let sends = 0;
let answers = 0;
subscribe('undici:client:sendHeaders', () => {
  if (process.env.LATE_SENDER_LOG) appendFileSync(process.env.LATE_SENDER_LOG, 'send\n');
  if (++sends % 2 === 0) {
    block(100);
    if (process.env.LATE_SENDER_LOG) appendFileSync(process.env.LATE_SENDER_LOG, 'blocked before a send\n');
  }
});
subscribe('undici:request:headers', () => {
  if (++answers % 3 === 0) block(100);
});
