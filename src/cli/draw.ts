/** What the command line draws: tables, the status report, progress lines. */
import type { CrawlStats } from '../crawl/counters/index.js';

/** A plain-text table, columns padded (the first left-aligned, the rest right-aligned). */
export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ')).join('\n');
}

const rate = (r: number | 'unlimited'): string => (r === 'unlimited' ? 'unlimited' : `${r}/s`);

/** Which domains the table's rows are, when not all of them. */
function shownLine(s: CrawlStats): string {
  const of = `of ${s.domainCount.toLocaleString('en-US')} domains`;
  // (A page further down the order says where it starts.)
  const after = s.shown.offset > 0 ? `, after the first ${s.shown.offset.toLocaleString('en-US')}` : '';
  switch (s.shown.by) {
    case 'named':
      return `${s.domains.length} ${of}, as named (--domain)`;
    case 'backlog':
      return `the ${s.domains.length} ${of} with the most URLs queued${after}${s.shown.exact ? '' : ' (the last few rows among several alike: others as big may be left out)'} (--top N [--offset K], --by waiting|errors, --domain D)`;
    case 'waiting':
      return `the ${s.domains.length} ${of} waiting longest for a worker while eligible${after} (--top N [--offset K], --by backlog|errors, --domain D)`;
    default:
      return `the ${s.domains.length} ${of} with the most failed URLs${after} (--top N [--offset K], --by backlog|waiting, --domain D)`;
  }
}

/** `weir status`: the arena's line, a row per domain, the Bloom filter's fill. */
export function formatStats(s: CrawlStats): string {
  const rows = s.domains.map((d) => [
    d.domain,
    d.queued,
    d.leased,
    d.done,
    d.pages,
    d.failed,
    d.dead,
    d.robotsBlocked,
    // (A learned pace slower than the limit is shown beside it.)
    d.pace !== d.rateLimit ? `${rate(d.rateLimit)} (pace ${rate(d.pace)})` : rate(d.rateLimit),
    `${d.achievedRate.toFixed(2)}/s`,
    d.held ? 'held' : d.nextEligibleAt > s.now ? `in ${((d.nextEligibleAt - s.now) / 1000).toFixed(2)}s` : d.queued > 0 ? 'now' : '-',
    d.waitingFor,
  ]);
  const lines = [
    `arena ${s.arena}: ${s.drained ? 'drained' : 'running'} — queued ${s.totals.queued}, leased ${s.totals.leased}, ${s.totals.revisits.done > 0 ? 'waiting (revisits, retries)' : 'waiting to retry'} ${s.totals.delayed}, done ${s.totals.done}, dead ${s.totals.dead}, pages ${s.totals.pages}`,
    ...(s.shown.by === 'all' ? [] : [shownLine(s)]),
    table(['domain', 'queued', 'leased', 'done', 'pages', 'failed', 'dead', 'robots', 'limit', 'achieved', 'next', 'waiting for'], rows),
    `workers seen in the last 15 s: ${s.workers}`,
  ];
  for (const f of s.faults) lines.push(`worker ${f.worker} stopped at ${new Date(f.at).toISOString()}: ${f.code}: ${f.message}`);
  if (s.totals.sitemaps > 0) lines.push(`sitemaps: ${s.totals.sitemaps} read, ${s.totals.sitemapUrls} in-scope URLs found in them`);
  if (s.totals.newDomains + s.totals.domainCapDrops > 0) lines.push(`other domains: ${s.totals.newDomains} found and queued${s.totals.domainCapDrops > 0 ? `, ${s.totals.domainCapDrops} links dropped past maxDomains` : ''}`);
  if (s.totals.quotaSkips > 0) lines.push(`maxPagesPerDomain: ${s.totals.quotaSkips} URLs skipped`);
  const rv = s.totals.revisits;
  if (rv.done + rv.capDrops > 0) {
    lines.push(`revisits: ${rv.done} done — ${rv.changed} changed, ${rv.unchanged} unchanged, ${rv.notModified} not modified (304); ${s.totals.delayed} URLs waiting for their next visit or a retry; ${rv.gone} dropped as gone${rv.capDrops > 0 ? `, ${rv.capDrops} pages visited once past maxUrls` : ''}`);
  }
  if (s.totals.addressMoves > 0) lines.push(`perServer: ${s.totals.addressMoves} URLs moved to their host's new address`);
  if (s.bloom) {
    lines.push(
      `bloom: ${s.bloom.bits} bits, ${s.bloom.hashes} hashes, ${(s.bloom.fill * 100).toFixed(3)}% full, estimated false-positive rate ${s.bloom.combinedFalsePositiveRate.toExponential(2)} (shared filter ${s.bloom.estimatedFalsePositiveRate.toExponential(2)}, workers' local filters at most ${s.bloom.localFalsePositiveRate.toExponential(2)})`,
    );
  }
  return lines.join('\n');
}

/** The summary a crawl ends with: a row per domain. */
export function formatCrawlSummary(s: CrawlStats, wallSeconds: number, workers: number, out?: string): string {
  const rows = s.domains.map((d) => [d.domain, d.pages, d.failed, d.robotsBlocked, d.dead, rate(d.rateLimit), `${d.achievedRate.toFixed(2)}/s`]);
  return [
    '',
    `crawl of ${s.arena} finished in ${wallSeconds.toFixed(1)} s with ${workers} workers`,
    table(['domain', 'pages', 'errors', 'robots', 'dead', 'limit', 'achieved'], rows),
    `total: ${s.totals.pages} pages, ${s.totals.errors} errors, ${s.totals.dead} dead-lettered, ${s.totals.queued} still queued${out ? `; output in ${out}` : ''}`,
  ].join('\n');
}

/**
 * A line redrawn in place on a terminal (or printed every few seconds
 * otherwise), every `everyMs`, with what `text()` says then. Returns a
 * function that stops it (and ends the line on a terminal).
 */
export function progressLine(stream: NodeJS.WriteStream, text: () => Promise<string>, everyMs?: number): () => void {
  const tty = stream.isTTY === true;
  const timer = setInterval(
    () => void text().then((line) => stream.write(tty ? `\r\x1b[2K${line}` : `${line}\n`), () => undefined),
    everyMs ?? (tty ? 1000 : 2000),
  );
  return () => {
    clearInterval(timer);
    if (tty) stream.write('\n');
  };
}
