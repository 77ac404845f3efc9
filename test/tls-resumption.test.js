'use strict';

const assert = require('node:assert/strict');
const tls = require('node:tls');
const { once } = require('node:events');
const { Pki } = require('./pki');
const { cleanup, onCleanup, startHttpBackend, startProxy, startLila, refusingPort } = require('./helpers');
const { TicketKeyRotation } = require('../lib/tls/ticket-keys');

const RECONNECTS = 12;

describe('TLS session resumption', function () {
  this.timeout(20000);
  let pki;
  let first;
  let second;

  before(() => {
    pki = new Pki();
    first = pki.issue({ names: ['lila.test'] });
    second = pki.issue({ names: ['other.test'] });
  });
  after(() => pki.remove());
  afterEach(cleanup);

  /**
   * A TLS connection to lila; resolves once a session ticket has come, with
   * whether it resumed `session` and the new session.
   */
  async function connect(port, servername, options = {}) {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, ca: pki.ca, ...options });
    onCleanup(() => socket.destroy());
    const sessions = [];
    socket.on('session', (session) => sessions.push(session));
    // TLS 1.3 tickets come after the handshake: read, so that they are processed.
    socket.resume();
    await once(socket, 'secureConnect');
    const reused = socket.isSessionReused();
    // A resumed session gets no new ticket: the one it came with goes on.
    if (reused) sessions.push(options.session);
    else if (socket.getProtocol() !== 'TLSv1.3') sessions.push(socket.getSession());
    else if (sessions.length === 0) await once(socket, 'session');
    socket.end();
    return { reused, session: sessions[sessions.length - 1] };
  }

  for (const version of ['TLSv1.2', 'TLSv1.3']) {
    it(`resumes sessions from tickets whichever worker a connection reaches, for every certificate (${version})`, async () => {
      const backend = await startHttpBackend('A');
      // A fixed port: on Node 22.12 and later each worker then has a SO_REUSEPORT socket of its
      // own, and the kernel spreads the connections over them (port 0 shares one socket).
      const port = await refusingPort();
      const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', String(port), '--workers', '2',
        '--tls-cert', first.certFile, '--tls-key', first.keyFile, '--tls-cert', second.certFile, '--tls-key', second.keyFile]);

      for (const servername of ['lila.test', 'other.test']) {
        let { session } = await connect(lila.port, servername, { maxVersion: version, minVersion: version });
        const reused = [];
        for (let i = 0; i < RECONNECTS; i++) {
          const next = await connect(lila.port, servername, { maxVersion: version, minVersion: version, session });
          reused.push(next.reused);
          session = next.session;
        }
        assert.deepEqual(reused, Array(RECONNECTS).fill(true), servername);
      }
    });
  }

  it('takes new ticket keys at every rotation: sessions of the new key resume, those of the old one make a full handshake', async () => {
    const backend = await startHttpBackend('A');
    const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address], tls: { certificates: [{ cert: first.certFile, key: first.keyFile }] } });
    const keys = [];
    const rotation = new TicketKeyRotation((next) => {
      keys.push(next);
      proxy.listener.setTicketKeys(next);
    }, { every: 60000 });
    onCleanup(() => rotation.stop());

    const before = await connect(proxy.port, 'lila.test');
    assert.equal((await connect(proxy.port, 'lila.test', { session: before.session })).reused, true);
    rotation.rotate();
    const stale = await connect(proxy.port, 'lila.test', { session: before.session });
    const fresh = await connect(proxy.port, 'lila.test', { session: stale.session });

    assert.equal(keys.length, 2);
    assert.notDeepEqual(keys[0], keys[1]);
    assert.equal(keys[1].length, 48);
    assert.equal(stale.reused, false);
    assert.equal(fresh.reused, true);
    assert.deepEqual(proxy.listener.server.getTicketKeys(), keys[1]);
  });
});
