'use strict';

const assert = require('node:assert/strict');
const StoreSession = require('../lib/fleet/session');
const { LilaError, codes } = require('../lib/errors');

// Longer than a test may take: a lease asked for must not wait it out.
const NEVER_MS = 60000;

// An etcd client that grants lease 7 and holds nothing, or whose calls fail (`down`).
function fakeClient({ down = false } = {}) {
  const refuse = () => Promise.reject(new LilaError(codes.STORE, 'etcd at 127.0.0.1:1: connect ECONNREFUSED'));
  return {
    grantLease: down ? refuse : async () => ({ id: '7' }),
    getPrefix: down ? refuse : async () => ({ kvs: [], revision: 1 }),
    watch: () => ({ close() {} }),
    keepAlive: async () => ({ ttl: 10 }),
    revoke: async () => {}
  };
}

function session(client) {
  const noop = () => {};
  return new StoreSession({
    client, prefix: '/lila/', leaseSeconds: 10,
    handlers: { read: noop, events: noop, register: async () => {}, up: noop, lost: noop }
  });
}

describe('StoreSession#firstLease', () => {
  const sessions = [];
  afterEach(async () => {
    await Promise.all(sessions.splice(0).map((item) => item.close()));
  });

  it('gives the first session\'s lease to a caller that asked before the session began', async () => {
    const member = session(fakeClient());
    sessions.push(member);
    const lease = member.firstLease(NEVER_MS);
    member.start();
    assert.equal(await lease, '7');
  });

  it('says the store is not reachable as soon as the first session fails, not after its wait', async () => {
    const member = session(fakeClient({ down: true }));
    sessions.push(member);
    const lease = member.firstLease(NEVER_MS);
    member.start();
    await assert.rejects(lease, { code: 'LILA_ERR_STORE', unavailable: true, message: /the store is not reachable/ });
  });

  it('says the store is not reachable after its wait when no session begins', async () => {
    const member = session(fakeClient());
    sessions.push(member);
    await assert.rejects(member.firstLease(20), { code: 'LILA_ERR_STORE', message: /the store is not reachable/ });
  });
});
