/** Counters added to hash fields in one script call (src/crawl/counters/add-fields.ts): the tallies and the request history. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addFields, addTo, type FieldAdds } from '../../src/crawl/counters/add-fields.js';
import { useRedis } from '../helpers/fixture.js';

const fx = useRedis();

async function flush(adds: FieldAdds): Promise<void> {
  const p = fx.redis.pipeline();
  addFields(p, adds);
  const r = await p.exec();
  for (const [err] of r ?? []) assert.equal(err, null);
}

describe('adding to hash fields', () => {
  it('adds to several hashes at once, making fields as needed; amounts are whole numbers, one not finite is left out; a field that holds no integer is set to the amount', async () => {
    await fx.redis.hset('af:a', { 'x.test:pages': '40', 'x.test:note': 'not a number' });
    const adds: FieldAdds = new Map();
    addTo(adds, 'af:a', 'x.test:pages', 2);
    addTo(adds, 'af:a', 'x.test:pages', 3);
    addTo(adds, 'af:a', 'x.test:bytes', 1024.4);
    addTo(adds, 'af:a', 'x.test:note', 7);
    addTo(adds, 'af:a', 'x.test:bad', Number.NaN);
    addTo(adds, 'af:b', 'y.test:pages', 1);
    addTo(adds, 'af:b', 'y.test:errors', -1);
    adds.set('af:empty', new Map());
    await flush(adds);
    assert.deepEqual(await fx.redis.hgetall('af:a'), { 'x.test:pages': '45', 'x.test:bytes': '1024', 'x.test:note': '7' });
    assert.deepEqual(await fx.redis.hgetall('af:b'), { 'y.test:pages': '1', 'y.test:errors': '-1' });
    assert.equal(await fx.redis.exists('af:empty'), 0);
    // Again: added to what is there now.
    await flush(adds);
    assert.deepEqual(await fx.redis.hgetall('af:a'), { 'x.test:pages': '50', 'x.test:bytes': '2048', 'x.test:note': '14' });
    assert.deepEqual(await fx.redis.hgetall('af:b'), { 'y.test:pages': '2', 'y.test:errors': '-2' });
  });

  it('takes a batch of thousands of fields in one call', async () => {
    const adds: FieldAdds = new Map();
    for (let i = 0; i < 2500; i++) addTo(adds, 'af:big', `d${i}.test:pages`, i);
    await flush(adds);
    await flush(adds);
    assert.equal(await fx.redis.hlen('af:big'), 2500);
    assert.equal(await fx.redis.hget('af:big', 'd2499.test:pages'), String(2 * 2499));
  });
});
