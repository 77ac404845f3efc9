'use strict';

const assert = require('node:assert/strict');
const tls = require('node:tls');
const { once } = require('node:events');
const { execFile } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { Pki } = require('./pki');
const { cleanup, onCleanup, startHttpBackend, startProxy, startLila, refusingPort } = require('./helpers');
const { findExecutable } = require('./peers');
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

  // What openssl s_client says of the ticket a first handshake gets: its lifetime hint in seconds.
  function lifetimeHint(port, servername, version) {
    return new Promise((resolve, reject) => {
      const child = execFile('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', servername,
        version === 'TLSv1.3' ? '-tls1_3' : '-tls1_2', '-ign_eof'], { timeout: 10000 }, (err, stdout) => {
        const match = /TLS session ticket lifetime hint: (\d+)/.exec(stdout);
        if (match !== null) resolve(Number(match[1]));
        else reject(err || new Error(`no lifetime hint in: ${stdout.slice(0, 500)}`));
      });
      // TLS 1.3 tickets follow the handshake: a request read to its end lets them come first.
      child.stdin.end(`GET / HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
    });
  }

  for (const version of ['TLSv1.2', 'TLSv1.3']) {
    it(`gives tickets the 5 minutes sessions may be resumed for, on every certificate (${version})`, async function () {
      if (findExecutable('openssl') === null) this.skip();
      const backend = await startHttpBackend('A');
      const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0',
        '--tls-cert', first.certFile, '--tls-key', first.keyFile, '--tls-cert', second.certFile, '--tls-key', second.keyFile]);

      assert.deepEqual(await Promise.all(['lila.test', 'other.test'].map((name) => lifetimeHint(lila.port, name, version))), [300, 300]);
    });

    it(`resumes a session just inside its lifetime and not just outside it (${version})`, async () => {
      const backend = await startHttpBackend('A');
      // Two seconds instead of 300: the same rule, in a test's time.
      const tlsOptions = { certificates: [{ cert: first.certFile, key: first.keyFile }, { cert: second.certFile, key: second.keyFile }], sessionTimeout: 2 };
      const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address], tls: tlsOptions });
      const options = { maxVersion: version, minVersion: version };

      for (const servername of ['lila.test', 'other.test']) {
        const saved = await connect(proxy.port, servername, options);
        await sleep(1000);
        const inside = await connect(proxy.port, servername, { ...options, session: saved.session });
        const again = await connect(proxy.port, servername, options);
        await sleep(3000);
        const outside = await connect(proxy.port, servername, { ...options, session: again.session });

        assert.deepEqual([inside.reused, outside.reused], [true, false], servername);
      }
    });
  }
});
