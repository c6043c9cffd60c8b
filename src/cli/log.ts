import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { WeirError } from '../errors.js';

export type LogFormat = 'human' | 'json';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const SKIP = new Set(['level', 'time', 'pid', 'hostname', 'msg']);

function value(v: unknown): string {
  if (typeof v === 'string') return /[\s"=]/.test(v) ? JSON.stringify(v) : v;
  if (v && typeof v === 'object' && 'message' in v && typeof v.message === 'string') return JSON.stringify(v.message);
  return JSON.stringify(v);
}

/** One pino JSON line as a person reads it: `12:00:01.234 WARN message key=value ...`. */
export function humanLine(json: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = new Date(typeof o.time === 'number' ? o.time : Date.now()).toISOString().slice(11, 23);
  const fields = Object.entries(o)
    .filter(([k]) => !SKIP.has(k))
    .map(([k, v]) => `${k}=${value(v)}`)
    .join(' ');
  return `${time} ${LEVELS[Number(o.level)] ?? String(o.level)} ${typeof o.msg === 'string' ? o.msg : ''}${fields ? ` ${fields}` : ''}\n`;
}

/** human on a terminal, JSON when piped; WEIR_LOG_FORMAT or --log-format choose. */
export function logFormat(flag: string | undefined, tty = process.stderr.isTTY === true): LogFormat {
  const f = flag ?? process.env.WEIR_LOG_FORMAT;
  if (f === undefined || f === '') return tty ? 'human' : 'json';
  if (f !== 'human' && f !== 'json') throw new WeirError('WEIR_USAGE', `--log-format must be human or json, got ${f}`);
  return f;
}

/** The command's logger, on stderr: level from WEIR_LOG_LEVEL (default info). */
export function makeLogger(format: LogFormat): Logger {
  const options = { level: process.env.WEIR_LOG_LEVEL ?? 'info', base: { pid: process.pid } };
  if (format === 'json') return pino(options, pino.destination(2));
  const human = new Writable({
    write(chunk: Buffer, _enc, done) {
      process.stderr.write(chunk.toString().split('\n').filter(Boolean).map(humanLine).join(''), () => done());
    },
  });
  return pino(options, human);
}
