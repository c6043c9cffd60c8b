// Preloaded (node --import) into a worker process to make it a deliberately
// late sender. Counts what it did in LATE_SENDER_LOG if set.
// - Default: its event loop is blocked for 100 ms right before every second
//   request's headers are written (this subscriber runs before weir's own
//   send gate, which subscribes later), and for 100 ms after every third
//   response's headers arrive.
// - LATE_SENDER_AFTER_GATE=<ms>: blocked that long on every second send
//   *after* weir's gate has let it go, before undici writes it (a process
//   preempted between the check and the write): the subscriber that blocks
//   is added on the first send, so it runs after weir's.
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';

const block = (ms) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};
const note = (line) => {
  if (process.env.LATE_SENDER_LOG) appendFileSync(process.env.LATE_SENDER_LOG, `${line}\n`);
};
const afterGateMs = Number(process.env.LATE_SENDER_AFTER_GATE ?? 0);
let sends = 0;
let answers = 0;
let afterGateSubscribed = false;
subscribe('undici:client:sendHeaders', () => {
  note('send');
  if (afterGateMs > 0) {
    if (!afterGateSubscribed) {
      afterGateSubscribed = true;
      subscribe('undici:client:sendHeaders', () => {
        if (++sends % 2 === 0) {
          block(afterGateMs);
          note('blocked after the gate');
        }
      });
    }
    return;
  }
  if (++sends % 2 === 0) {
    block(100);
    note('blocked before a send');
  }
});
subscribe('undici:request:headers', () => {
  if (afterGateMs === 0 && ++answers % 3 === 0) block(100);
});
