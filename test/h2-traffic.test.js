'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http2 = require('node:http2');
const net = require('node:net');
const tls = require('node:tls');
const { once } = require('node:events');
const { Pki } = require('./pki');
const { cleanup, onCleanup, startHttpBackend, startLila, nextLine, prng, until } = require('./helpers');
const { connectH2, startH2Backend, fetchH2, streamOutcome } = require('./h2');

const { NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_NO_ERROR } = http2.constants;
const PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';
const SEED = 20261125;

describe('HTTP/2 under real traffic', function () {
  this.timeout(60000);
  afterEach(cleanup);

  describe('clients cancelling streams on a shared h2 backend', () => {
    const STREAMS = 8000;
    const CLIENTS = 20;
    const CANCEL_SHARE = 0.4;
    // nghttp2 (and so a Node backend) sends GOAWAY past a burst of 1000 resets on a session.
    const BACKEND_LIMIT = 1000;

    it(`serves every stream not cancelled while ${CANCEL_SHARE * 100}% are, and no backend session takes more than half the backend's reset limit`, async () => {
      const random = prng(SEED);
      const resetsBySession = new Map();
      const backend = await startH2Backend('B', (stream) => {
        const session = stream.session;
        stream.on('close', () => {
          if (stream.rstCode === NGHTTP2_CANCEL) resetsBySession.set(session, (resetsBySession.get(session) || 0) + 1);
        });
        // Answers a few milliseconds later, as a backend at work does: cancels land mid-flight.
        setTimeout(() => {
          if (stream.destroyed || stream.closed) return;
          stream.respond({ ':status': 200 });
          stream.end('B');
        }, random(5));
      });
      const lila = await startLila(['round-robin', `${backend.address},h2`, '-a', '127.0.0.1', '-p', '0']);

      const outcomes = { served: 0, failed: [], cancelled: 0 };
      let started = 0;
      await Promise.all(Array.from({ length: CLIENTS }, async () => {
        const session = await connectH2(`http://127.0.0.1:${lila.port}`);
        while (started < STREAMS) {
          started++;
          const stream = session.request({ ':path': '/' });
          if (random(100) < CANCEL_SHARE * 100) {
            outcomes.cancelled++;
            stream.on('error', () => {});
            await new Promise((resolve) => setTimeout(resolve, random(4)));
            stream.close(NGHTTP2_CANCEL);
            continue;
          }
          const outcome = await streamOutcome(stream);
          if (outcome.ended && outcome.rstCode === NGHTTP2_NO_ERROR) outcomes.served++;
          else outcomes.failed.push(outcome);
        }
        session.close();
      }));

      const resets = [...resetsBySession.values()];
      const totalResets = resets.reduce((sum, n) => sum + n, 0);
      assert.deepEqual(outcomes.failed, []);
      assert.equal(outcomes.served + outcomes.cancelled, STREAMS);
      assert.ok(totalResets > BACKEND_LIMIT, `the clients' cancels reached the backend as ${totalResets} resets`);
      assert.ok(Math.max(...resets) <= BACKEND_LIMIT / 2, `resets per backend session: ${resets.join(', ')}`);
      // A new session every 100 resets or fewer is a small multiple of the one needed.
      assert.ok(backend.sessionCount <= 2 + totalResets / 100, `${backend.sessionCount} sessions for ${totalResets} resets`);
      assert.doesNotMatch(lila.stderr, /warn|error/);
    });
  });

  describe('a backend\'s GOAWAY', () => {
    for (const [code, name] of [[NGHTTP2_ENHANCE_YOUR_CALM, 'ENHANCE_YOUR_CALM'], [NGHTTP2_NO_ERROR, 'NO_ERROR']]) {
      it(`sends the streams it never processed (${name}) again, all on one new session, and blames no backend`, async () => {
        const HELD = 6;
        const PROCESSED = 2;
        let first = null;
        const held = [];
        const backend = await startH2Backend('B', (stream) => {
          stream.resume();
          if (first === null) first = stream.session;
          if (stream.session !== first) {
            stream.respond({ ':status': 200 });
            stream.end('again');
            return;
          }
          held.push(stream);
          if (held.length < HELD) return;
          // The first session takes HELD streams, answers two and says it processed only those.
          for (const answered of held.slice(0, PROCESSED)) {
            answered.respond({ ':status': 200 });
            answered.end('first');
          }
          setImmediate(() => {
            first.goaway(code, held[PROCESSED - 1].id);
            setImmediate(() => first.destroy());
          });
        });
        const lila = await startLila(['round-robin', `${backend.address},h2`, '-a', '127.0.0.1', '-p', '0', '--log-level', 'debug']);

        // POST: not idempotent, so sent again only because the backend never processed it.
        const session = await connectH2(`http://127.0.0.1:${lila.port}`);
        const responses = await Promise.all(Array.from({ length: HELD }, () => fetchH2(session, { ':method': 'POST' })));
        const after = await fetchH2(session);

        assert.deepEqual(responses.map((r) => `${r.status} ${r.body}`).sort(),
          [...Array(HELD - PROCESSED).fill('200 again'), ...Array(PROCESSED).fill('200 first')]);
        assert.equal(backend.sessionCount, 2);
        assert.equal(after.status, 200);
        assert.doesNotMatch(lila.stderr, /is down|warn/);
      });
    }
  });

  describe('descriptors of TLS clients that leave at any moment', () => {
    const AT_EACH_MOMENT = 60;
    const AT_ONCE = 20;
    let pki;
    let certificate;

    before(() => {
      pki = new Pki();
      certificate = pki.issue({ names: ['localhost'] });
    });
    after(() => pki.remove());

    // When a client leaves. `raw` is its TCP connection; `client` a TLS socket on it, offering
    // h2, made at the first call, unless the moment speaks TLS by itself.
    const MOMENTS = [
      ['right after connecting', ({ raw }, leave) => raw.once('connect', leave)],
      ['once lila\'s first flight of the handshake arrives', ({ raw }, leave) => {
        raw.write(clientHello);
        raw.once('data', leave);
      }],
      ['at the end of the handshake', ({ client }, leave) => client().once('secureConnect', leave)],
      ['a turn after the handshake', ({ client }, leave) => client().once('secureConnect', () => setImmediate(leave))],
      ['after half the connection preface', ({ client }, leave) => {
        const socket = client();
        socket.once('secureConnect', () => socket.write(PREFACE.slice(0, 10), leave));
      }],
      ['after the connection preface', ({ client }, leave) => {
        const socket = client();
        socket.once('secureConnect', () => socket.write(PREFACE, leave));
      }],
      ['after the preface, SETTINGS and a request', ({ client }, leave) => {
        const session = http2.connect('https://localhost', { createConnection: () => client(false) });
        session.on('error', () => {});
        const stream = session.request({ ':path': '/' });
        stream.on('error', () => {});
        stream.once('ready', () => setImmediate(leave));
      }],
      ['mid-response', ({ client }, leave) => {
        const session = http2.connect('https://localhost', { createConnection: () => client(false) });
        session.on('error', () => {});
        const stream = session.request({ ':path': '/slow' });
        stream.on('error', () => {});
        stream.once('response', leave);
      }]
    ];
    let clientHello;

    before(async () => {
      clientHello = await recordClientHello(pki.ca);
    });

    for (const how of ['reset', 'fin']) {
      it(`closes every connection of h2 clients that ${how === 'reset' ? 'reset' : 'send FIN'} at each moment of the handshake and the preface, and stops at once`, async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          req.resume();
          // Not kept: at rest, lila holds no upstream connection.
          res.setHeader('Connection', 'close');
          if (req.url === '/slow') {
            res.write('A');
            setTimeout(() => res.end('A'), 50);
          } else {
            res.end('A');
          }
        });
        // A TLS write that fails as a reset arrives leaves Node's socket never writing again, and
        // an h2 session then stops reading it: lila finds such a client gone when it does not
        // answer a PING sent after --header-timeout of silence (10 s by default). A FIN fails no
        // write, and is seen at once: the default, under which a FIN in a handshake used to
        // keep the connection half-open for as long.
        const timeout = how === 'reset' ? ['--header-timeout', '500ms'] : [];
        const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0',
          '--tls-cert', certificate.certFile, '--tls-key', certificate.keyFile, ...timeout]);
        const atRest = descriptors(lila.child.pid);

        for (const [, moment] of MOMENTS) {
          let started = 0;
          await Promise.all(Array.from({ length: AT_ONCE }, async () => {
            while (started < AT_EACH_MOMENT) {
              started++;
              await leaveAt(lila.port, pki.ca, moment, how);
            }
          }));
        }
        const left = await descriptorsBackTo(lila.child.pid, atRest);
        lila.child.kill('SIGTERM');
        const { code } = await lila.closed;

        assert.equal(left, atRest, `lila holds ${left - atRest} more descriptors than at rest`);
        assert.equal(code, 0);
        assert.match(lila.stderr, /stopped: every request and connection finished/);
      });
    }

    // The other listeners serve TLS the same way: none keeps a connection half-open mid-handshake.
    for (const [name, args] of [['the node engine', ['--engine', 'node']], ['the tcp layer', ['--layer', 'tcp']]]) {
      it(`closes every connection of clients that send FIN during or right after the handshake (${name})`, async () => {
        const backend = await startHttpBackend('A');
        const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', ...args,
          '--tls-cert', certificate.certFile, '--tls-key', certificate.keyFile]);
        const atRest = descriptors(lila.child.pid);

        for (const [, moment] of MOMENTS.slice(1, 4)) {
          for (let i = 0; i < AT_EACH_MOMENT; i++) await leaveAt(lila.port, pki.ca, moment, 'fin');
        }
        const left = await descriptorsBackTo(lila.child.pid, atRest);

        assert.equal(left, atRest, `lila holds ${left - atRest} more descriptors than at rest`);
      });
    }
  });

  describe('the rapid-reset guard', () => {
    let backend;
    beforeEach(async () => {
      // Never answers in time: every stream is still open when its client cancels or leaves.
      backend = await startHttpBackend('A', (req, res) => {
        req.resume();
        backend.open++;
        const timer = setTimeout(() => res.end('A'), 2000);
        res.on('close', () => {
          clearTimeout(timer);
          backend.open--;
        });
      });
      backend.open = 0;
    });

    it('writes one line, naming the client, for a connection that resets 150 streams', async () => {
      const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0']);
      const session = await connectH2(`http://127.0.0.1:${lila.port}`);
      const warned = nextLine(lila, /lila: warn: client 127\.0\.0\.1: \d+ of \d+ h2 streams reset before their response; GOAWAY \(rapid reset\)/);

      for (let i = 0; i < 150 && !session.closed && !session.destroyed; i++) {
        const stream = session.request({ ':path': '/' });
        stream.on('error', () => {});
        // HEADERS and RST_STREAM in one write, as a rapid-reset attack sends them.
        stream.close(NGHTTP2_CANCEL);
        await new Promise(setImmediate);
      }
      await warned;
      await new Promise((resolve) => session.once('close', resolve));
      // lila's side of the connection is over once the backend has seen every request end.
      await untilNoneOpen(backend);

      assert.equal(lila.stderr.match(/rapid reset/g).length, 1, lila.stderr);
    });

    for (const streams of [101, 150]) {
      it(`writes nothing for a client that leaves with ${streams} streams open, sending no RST_STREAM`, async () => {
        const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--max-concurrent-streams', '200']);
        const socket = net.connect(lila.port, '127.0.0.1');
        const session = http2.connect(`http://127.0.0.1:${lila.port}`, { createConnection: () => socket });
        onCleanup(() => session.destroy());
        session.on('error', () => {});
        await once(session, 'remoteSettings');
        for (let i = 0; i < streams; i++) session.request({ ':path': '/' }).on('error', () => {});
        await until(() => backend.open === streams, `the backend has ${streams} requests`);

        socket.resetAndDestroy();
        await untilNoneOpen(backend);

        assert.doesNotMatch(lila.stderr, /rapid reset|warn/);
      });
    }
  });
});

/**
 * Opens a connection to lila and leaves it at `moment`, with an RST or a FIN
 * (without TLS's close_notify); resolves once it is closed.
 *
 * @param {number} port
 * @param {string} ca
 * @param {(peer: {raw: net.Socket, client: () => tls.TLSSocket}, leave: () => void) => void} moment
 *   calls `leave` when it is time
 * @param {'reset' | 'fin'} how
 */
function leaveAt(port, ca, moment, how) {
  return new Promise((resolve) => {
    const raw = net.connect(port, '127.0.0.1');
    onCleanup(() => raw.destroy());
    raw.on('error', () => {});
    let tlsSocket = null;
    // `read`: false when an h2 session takes the socket, which then reads it.
    const client = (read = true) => {
      tlsSocket = tls.connect({ socket: raw, servername: 'localhost', ca, ALPNProtocols: ['h2'] });
      tlsSocket.on('error', () => {});
      if (read) tlsSocket.resume();
      // Once TLS has the connection, only the TLS socket sees it end.
      tlsSocket.once('close', resolve);
      if (how === 'fin') tlsSocket.once('end', () => tlsSocket.destroy());
      return tlsSocket;
    };
    raw.once('close', resolve);
    if (how === 'fin') raw.once('end', () => raw.destroy());
    const leave = () => {
      if (raw.destroyed) return;
      if (how === 'reset') raw.resetAndDestroy();
      else raw.end();
    };
    moment({ raw, client }, leave);
  });
}

/**
 * The first bytes a TLS client offering h2 sends (its ClientHello), as a
 * listener of the test receives them: sent again, they start a handshake.
 *
 * @param {string} ca
 * @returns {Promise<Buffer>}
 */
async function recordClientHello(ca) {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = tls.connect({ port: server.address().port, host: '127.0.0.1', servername: 'localhost', ca, ALPNProtocols: ['h2'] });
  client.on('error', () => {});
  const [socket] = await once(server, 'connection');
  const [hello] = await once(socket, 'data');
  socket.destroy();
  client.destroy();
  server.close();
  return hello;
}

function descriptors(pid) {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

// Polls lila's descriptors until they are back to `target` (nothing tells the test when a
// connection lila closes is gone); at the deadline, the count it has then.
async function descriptorsBackTo(pid, target) {
  const deadline = Date.now() + 5000;
  let count = descriptors(pid);
  while (count > target && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    count = descriptors(pid);
  }
  return count;
}

function untilNoneOpen(backend) {
  return until(() => backend.open === 0, 'the backend has no request open');
}
