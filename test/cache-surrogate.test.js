'use strict';

const assert = require('node:assert/strict');
const { cleanup } = require('./helpers');
const { startOrigin, startCachingLila, get, lilaStatus } = require('./cache-harness');

// lila as a surrogate (W3C Edge Architecture): it announces itself in Surrogate-Capability, obeys
// the Surrogate-Control directives meant for it over Cache-Control, and keeps them from clients.
describe('cache: Surrogate-Control', () => {
  afterEach(cleanup);

  it('announces itself to the backend after the surrogates in front of it', async () => {
    const origin = await startOrigin();
    const lila = await startCachingLila([origin.address]);

    await get(lila.port, '/alone');
    await get(lila.port, '/behind', { 'Surrogate-Capability': 'cdn="Surrogate/1.0 ESI/1.0"' });

    assert.equal(origin.requests[0].headers['surrogate-capability'], 'lila="Surrogate/1.0"');
    assert.equal(origin.requests[1].headers['surrogate-capability'], 'cdn="Surrogate/1.0 ESI/1.0", lila="Surrogate/1.0"');
  });

  it('stores for its max-age over Cache-Control: no-store, and sends the client Cache-Control alone', async () => {
    const origin = await startOrigin();
    origin.serve('/edge', { headers: { 'Cache-Control': 'no-store', 'Surrogate-Control': 'max-age=600;lila' }, body: 'edge' });
    const lila = await startCachingLila([origin.address]);

    const first = await get(lila.port, '/edge');
    const second = await get(lila.port, '/edge');

    assert.equal(origin.hits('/edge'), 1);
    assert.match(lilaStatus(first), /stored/);
    // The seconds left of the 600: a second or two less on a busy machine (CI once saw 598).
    const ttl = Number(/^hit; ttl=(\d+)$/.exec(lilaStatus(second))?.[1]);
    assert.ok(ttl >= 590 && ttl <= 600, lilaStatus(second));
    for (const answer of [first, second]) {
      assert.equal(answer.body, 'edge');
      assert.equal(answer.headers['cache-control'], 'no-store');
      assert.equal(answer.headers['surrogate-control'], undefined);
    }
  });

  it('does not store with no-store, over a long Cache-Control max-age', async () => {
    const origin = await startOrigin();
    origin.serve('/private', { headers: { 'Cache-Control': 'max-age=3600', 'Surrogate-Control': 'no-store' }, body: 'fresh each time' });
    const lila = await startCachingLila([origin.address]);

    await get(lila.port, '/private');
    const second = await get(lila.port, '/private');

    assert.equal(origin.hits('/private'), 2);
    assert.equal(second.headers['cache-control'], 'max-age=3600');
    assert.equal(second.headers['surrogate-control'], undefined);
  });

  it('ignores what targets another surrogate, going by Cache-Control', async () => {
    const origin = await startOrigin();
    origin.serve('/theirs', { headers: { 'Cache-Control': 'max-age=0', 'Surrogate-Control': 'max-age=3600;akamai' } });
    const lila = await startCachingLila([origin.address]);

    await get(lila.port, '/theirs');
    await get(lila.port, '/theirs');

    assert.equal(origin.hits('/theirs'), 2);
  });

  it('answers stale within max-age\'s +M when the backend fails', async () => {
    const origin = await startOrigin();
    origin.serve('/down', (req, res, count) => {
      if (count === 1) {
        // Already past its 5 s of freshness (Age 10), within 3600 s more of grace.
        res.writeHead(200, { 'Surrogate-Control': 'max-age=5+3600', Age: '10' });
        res.end('kept');
        return;
      }
      res.writeHead(503);
      res.end('down');
    });
    const lila = await startCachingLila([origin.address]);

    await get(lila.port, '/down');
    const stale = await get(lila.port, '/down');

    assert.equal(origin.hits('/down'), 2);
    assert.equal(stale.status, 200);
    assert.equal(stale.body, 'kept');
    assert.match(lilaStatus(stale), /^fwd=stale; fwd-status=503; ttl=-\d+; detail=stale-if-error$/);
  });
});
