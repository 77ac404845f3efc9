'use strict';

const assert = require('node:assert/strict');
const { isSampled } = require('../lib/tracing/sampler');
const { prng } = require('./helpers');

// Trace ids from a seeded generator: the same shares on every run.
function traceIds(count) {
  const next = prng(50);
  return Array.from({ length: count }, () => Array.from({ length: 32 }, () => next(16).toString(16)).join(''));
}

describe('trace sampling (--trace-sample)', () => {
  it("follows a client's sampled flag whatever the ratio", () => {
    const id = '4bf92f3577b34da6a3ce929d0e0e4736';

    assert.equal(isSampled(id, '01', 0), true);
    assert.equal(isSampled(id, '00', 1), false);
    assert.equal(isSampled(id, '03', 0.5), true);
  });

  it('records the traces lila starts at the ratio, decided by the trace id alone', () => {
    const ids = traceIds(20000);
    const share = (ratio) => ids.filter((id) => isSampled(id, null, ratio)).length / ids.length;

    assert.equal(share(1), 1);
    assert.equal(share(0), 0);
    assert.ok(Math.abs(share(0.25) - 0.25) < 0.02, `${share(0.25)}`);
    assert.ok(Math.abs(share(0.01) - 0.01) < 0.004, `${share(0.01)}`);
    assert.equal(isSampled('00000000000000000000000000000001', null, 0.001), true, 'low tail: in at any ratio above 0');
    assert.equal(isSampled('0000000000000000000fffffffffffff', null, 0.999), false, 'high tail: out below 1');
    for (const id of ids.slice(0, 100)) assert.equal(isSampled(id, null, 0.3), isSampled(id, null, 0.3));
  });
});
