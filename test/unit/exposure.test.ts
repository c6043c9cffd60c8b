/**
 * What weir shows and answers to (issue 29, items 6 and 7): the status page
 * answers only to its own names, and a Redis URL's credentials are masked
 * in every form ioredis takes them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redactRedisUrl } from '../../src/redis.js';
import { hostCheck } from '../../src/status/server.js';

describe('what weir shows and answers to', () => {
  it('the status page answers to an IP address, localhost or its --host name (any port: tunnels map it); never to another name', () => {
    const ok = hostCheck('127.0.0.1');
    for (const host of ['127.0.0.1:8080', 'localhost:8080', '[::1]:8080', '192.168.1.5:8080', 'LOCALHOST:8080', '127.0.0.1:9000', '127.0.0.1']) assert.equal(ok(host), true, host);
    for (const host of [undefined, '', 'attacker.example:8080', 'attacker.example', 'localhost.:8080', 'localhost.attacker.example', 'user@127.0.0.1:8080', '127.0.0.1:8080/x', 'localhost?x', 'localhost#x', 'a b']) assert.equal(ok(host), false, String(host));
    const named = hostCheck('status.internal');
    assert.equal(named('status.internal'), true);
    assert.equal(named('STATUS.internal:8090'), true);
    assert.equal(named('other.internal'), false);
  });

  it("a Redis URL's password is masked wherever it is: user part or query", () => {
    assert.equal(redactRedisUrl('redis://:hunter2@h:6379/0'), 'redis://:***@h:6379/0');
    assert.equal(redactRedisUrl('redis://me:hunter2@h:6379'), 'redis://me:***@h:6379');
    const q = redactRedisUrl('redis://h:6379/?password=hunter2&db=2&tls_auth_token=abc');
    assert.ok(!q.includes('hunter2') && !q.includes('abc'), q);
    assert.match(q, /db=2/);
    assert.equal(redactRedisUrl('not a url'), '(unparseable Redis URL)');
  });
});
