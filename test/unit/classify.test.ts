/** Response classification and the error policy: status and error to outcome. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffMs, classifyResponse, fetchFailed, retryAfterSeconds, RETRY_POLICY, slowDown } from '../../src/crawl/lease/classify.js';
import { FetchError, fetchCodeOf } from '../../src/crawl/fetch/errors.js';
import { watchdog } from '../../src/crawl/fetch/fetcher.js';
import { PrivateAddressError } from '../../src/crawl/fetch/netguard.js';
import { isWeirError } from '../../src/errors.js';

const res = (status: number, headers: Record<string, string> = {}) => ({ status, headers });

describe('response classification', () => {
  it('redirects need a Location; 429 and 503-with-Retry-After slow the domain; other 5xx retry; the rest is final', () => {
    assert.equal(classifyResponse(res(301, { location: '/x' })), 'redirect');
    assert.equal(classifyResponse(res(304)), 'final');
    assert.equal(classifyResponse(res(302)), 'final');
    assert.equal(classifyResponse(res(429)), 'slow-down');
    assert.equal(classifyResponse(res(503, { 'retry-after': '5' })), 'slow-down');
    assert.equal(classifyResponse(res(503)), 'server-error');
    assert.equal(classifyResponse(res(500)), 'server-error');
    assert.equal(classifyResponse(res(404)), 'final');
    assert.equal(classifyResponse(res(200)), 'final');
  });

  it('Retry-After: seconds or an HTTP date; unreadable is null', () => {
    assert.equal(retryAfterSeconds('120'), 120);
    assert.equal(retryAfterSeconds(' 7 '), 7);
    assert.equal(retryAfterSeconds(new Date(1_000_000 + 30_000).toUTCString(), 1_000_000), 30);
    assert.equal(retryAfterSeconds(new Date(0).toUTCString(), 1_000_000), 0);
    assert.equal(retryAfterSeconds('soon'), null);
    assert.equal(retryAfterSeconds(undefined), null);
  });

  it('a slow-down pauses for the time asked, capped, and 30 s for a bare 429', () => {
    assert.deepEqual(slowDown(res(429, { 'retry-after': '2' })), { kind: 'pause', ms: 2000, reason: 'HTTP 429, Retry-After 2s', tallies: [['paced', 1]] });
    assert.equal((slowDown(res(429)) as { ms: number }).ms, RETRY_POLICY.default429Seconds * 1000);
    assert.equal((slowDown(res(503, { 'retry-after': '99999999' })) as { ms: number }).ms, RETRY_POLICY.maxRetryAfterSeconds * 1000);
  });

  it('Retry-After: 0 cannot spin: a floor doubling per time the URL was paced, then the dead letter with the reason', () => {
    const zero = res(503, { 'retry-after': '0' });
    assert.equal((slowDown(zero, 0, 100) as { ms: number }).ms, 100);
    assert.equal((slowDown(zero, 3, 100) as { ms: number }).ms, 800);
    assert.equal((slowDown(zero, 9, 1000) as { ms: number }).ms, RETRY_POLICY.pacingFloorMaxMs);
    assert.equal((slowDown(res(429, { 'retry-after': '5' }), 1, 100) as { ms: number }).ms, 5000, 'the time asked, when longer');
    const last = slowDown(zero, RETRY_POLICY.maxPacedRetries, 100);
    assert.equal(last.kind, 'fail');
    assert.ok(last.kind === 'fail' && /asked to slow down 11 times \(HTTP 503, Retry-After 0s\)/.test(last.reason));
  });

  it('backoff doubles per attempt with jitter 0.5–1.5, capped', () => {
    assert.equal(backoffMs(1, 1000, () => 0.5), 1000);
    assert.equal(backoffMs(3, 1000, () => 0.5), 4000);
    assert.equal(backoffMs(3, 1000, () => 0), 2000);
    assert.equal(backoffMs(3, 1000, () => 0.9999999), 6000);
    assert.equal(backoffMs(40, 1000, () => 0.5), RETRY_POLICY.retryMaxMs);
  });

  it('a refused private address is final; other fetch failures retry counting an attempt', () => {
    const refused = fetchFailed(new FetchError('WEIR_PRIVATE_ADDRESS', 'no', 3), 1);
    assert.equal(refused.kind, 'fail');
    const reset = fetchFailed(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 2, 100);
    assert.equal(reset.kind, 'retry');
    assert.ok(reset.kind === 'retry' && reset.countAttempt && reset.reason.startsWith('WEIR_RESET: '));
  });
});

describe('fetch errors', () => {
  it('raw undici and Node codes map to stable weir codes; the raw error stays as cause', () => {
    const cases: [string, string][] = [
      ['ENOTFOUND', 'WEIR_DNS'],
      ['ECONNREFUSED', 'WEIR_CONNECT'],
      ['UND_ERR_CONNECT_TIMEOUT', 'WEIR_CONNECT'],
      ['ECONNRESET', 'WEIR_RESET'],
      ['UND_ERR_SOCKET', 'WEIR_RESET'],
      ['HPE_INVALID_CONSTANT', 'WEIR_PROTOCOL'],
      ['ERR_TLS_CERT_ALTNAME_INVALID', 'WEIR_TLS'],
      ['UND_ERR_HEADERS_TIMEOUT', 'WEIR_TIMEOUT'],
      ['Z_DATA_ERROR', 'WEIR_BAD_ENCODING'],
      ['ERR_SOMETHING_NEW', 'WEIR_NETWORK'],
    ];
    for (const [raw, code] of cases) assert.equal(fetchCodeOf(raw), code, raw);
    const cause = Object.assign(new Error('boom'), { code: 'ECONNREFUSED' });
    const e = FetchError.from(cause, 12);
    assert.ok(isWeirError(e, 'WEIR_CONNECT'));
    assert.equal(e.cause, cause);
    assert.equal(e.rawCode, 'ECONNREFUSED');
    assert.equal(e.elapsedMs, 12);
    assert.equal(FetchError.from(new Error('x'), 5, true).code, 'WEIR_TIMEOUT');
    assert.equal(FetchError.from(new PrivateAddressError('h', '10.0.0.1'), 0).code, 'WEIR_PRIVATE_ADDRESS');
    assert.equal(FetchError.from({ cause: new PrivateAddressError('h', '10.0.0.1') }, 0).code, 'WEIR_PRIVATE_ADDRESS');
  });
});

describe('fetch watchdog', () => {
  it('a fetch that never settles is abandoned at its deadline, whatever the HTTP client does', async () => {
    const never = new Promise<string>(() => undefined);
    const started = performance.now();
    await assert.rejects(
      watchdog(never, 50, () => new FetchError('WEIR_TIMEOUT', 'abandoned', 50)),
      (e: unknown) => isWeirError(e, 'WEIR_TIMEOUT'),
    );
    assert.ok(performance.now() - started >= 49);
    assert.equal(await watchdog(Promise.resolve('ok'), 50, () => new Error('no')), 'ok');
    await assert.rejects(watchdog(Promise.reject(new Error('own error')), 50, () => new Error('no')), /own error/);
  });
});
