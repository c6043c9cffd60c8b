/** The private-network guard. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { guardedLookup, isPrivateAddress } from '../../src/crawl/fetch/netguard.js';
describe('private-network guard', () => {
  it('classifies addresses', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00:ec2::254', '::ffff:127.0.0.1']) {
      assert.equal(isPrivateAddress(a), true, a);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111']) assert.equal(isPrivateAddress(a), false, a);
  });

  it('refuses a name whose DNS answer is private, checked on the answer given to connect', async () => {
    const answers: Record<string, string> = { 'public.test': '93.184.216.34', 'sneaky.test': '127.0.0.1' };
    const resolve = (host: string, _o: unknown, cb: (e: NodeJS.ErrnoException | null, a: { address: string; family: number }[]) => void): void =>
      cb(null, [{ address: answers[host] ?? '10.0.0.1', family: 4 }]);
    const lookup = guardedLookup(false, resolve);
    const ask = (host: string): Promise<string> =>
      new Promise((res) => lookup(host, {}, (err, address) => res(err ? `error ${(err as { code?: string }).code}` : (address as string))));
    assert.equal(await ask('public.test'), '93.184.216.34');
    assert.equal(await ask('sneaky.test'), 'error WEIR_PRIVATE_ADDRESS');
    // The answer changes between checks: each connection is judged on its own answer.
    answers['public.test'] = '169.254.169.254';
    assert.equal(await ask('public.test'), 'error WEIR_PRIVATE_ADDRESS');
    assert.equal(await new Promise((res) => guardedLookup(true, resolve)('sneaky.test', {}, (_e, a) => res(a))), '127.0.0.1');
  });
});
