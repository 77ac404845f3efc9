'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { once } = require('node:events');
const { connectH2, fetchH2 } = require('./h2');
const { cleanup, startHttpBackend, request, until, deferred, sha256, collect } = require('./helpers');
const { startMirrored, copiesArrived, outcomes, upload, pieces } = require('./mirror-backends');
const { shadowHost, takePlace, MAX_COPIES } = require('../lib/http/mirror/send');

// What a --mirror copy is (issue 38): the request as its backend gets it, body byte for byte
// up to --mirror-body-limit, Host with Envoy's -shadow; on both engines and h2 streams.

describe('--mirror copies', function () {
  this.timeout(30000);
  afterEach(cleanup);

  describe('bodies', () => {
    for (const engine of ['fast', 'node']) {
      for (const framing of ['Content-Length', 'chunked']) {
        it(`are mirrored byte for byte (--engine ${engine}, HTTP/1.1, ${framing})`, async () => {
          const { port, shadow } = await startMirrored('  route * main --mirror shadow', engine);
          const body = crypto.randomBytes(300000);
          const headers = framing === 'chunked' ? {} : { 'content-length': body.length };
          const answer = await upload(port, { headers }, pieces(body));

          assert.deepEqual(answer, { status: 201, body: sha256(body) });
          const [copy] = await copiesArrived(shadow, 1);
          assert.deepEqual([copy.length, copy.sha], [body.length, sha256(body)]);
          // Sent whole, so with its length.
          assert.equal(copy.headers['content-length'], String(body.length));
        });
      }
    }

    for (const length of ['content-length', 'no content-length']) {
      it(`are mirrored byte for byte (--engine fast, h2, ${length})`, async () => {
        const { port, shadow } = await startMirrored('  route * main --mirror shadow');
        const body = crypto.randomBytes(300000);
        const session = await connectH2(`http://127.0.0.1:${port}`);
        const headers = { ':method': 'POST', ...(length === 'content-length' ? { 'content-length': body.length } : {}) };
        const answer = await fetchH2(session, headers, body);

        assert.deepEqual([answer.status, answer.body.toString()], [201, sha256(body)]);
        const [copy] = await copiesArrived(shadow, 1);
        assert.deepEqual([copy.length, copy.sha], [body.length, sha256(body)]);
      });
    }

    for (const [engine, protocol] of [['fast', 'HTTP/1.1'], ['fast', 'h2'], ['node', 'HTTP/1.1']]) {
      it(`are mirrored whole when they came while --forward-auth decided (--engine ${engine}, ${protocol})`, async () => {
        // The auth service says yes once the client has written its whole body: lila holds it meanwhile.
        const written = deferred();
        const auth = await startHttpBackend('AUTH', (req, res) => {
          req.resume();
          written.promise.then(() => res.end('yes'));
        });
        const { port, shadow } = await startMirrored(`  route * main --mirror shadow --forward-auth http://127.0.0.1:${auth.port}/check`, engine);
        // Less than lila holds before it stops reading (64 KB).
        const body = crypto.randomBytes(40000);
        let answer;
        if (protocol === 'h2') {
          const session = await connectH2(`http://127.0.0.1:${port}`);
          const stream = session.request({ ':method': 'POST', ':path': '/' });
          stream.on('finish', written.resolve);
          stream.end(body);
          const [head] = await once(stream, 'response');
          answer = { status: head[':status'], body: (await collect(stream)).toString() };
        } else {
          answer = await upload(port, {}, pieces(body), written.resolve);
        }

        assert.deepEqual(answer, { status: 201, body: sha256(body) });
        const [copy] = await copiesArrived(shadow, 1);
        assert.deepEqual([copy.length, copy.sha], [body.length, sha256(body)]);
      });
    }

    for (const [engine, protocol, framing] of [['fast', 'HTTP/1.1', 'Content-Length'], ['fast', 'HTTP/1.1', 'chunked'],
      ['fast', 'h2', 'no content-length'], ['node', 'HTTP/1.1', 'Content-Length'], ['node', 'HTTP/1.1', 'chunked']]) {
      it(`over --mirror-body-limit are not mirrored, counted too_large; the client is answered (--engine ${engine}, ${protocol}, ${framing})`, async () => {
        const { port, service, shadow } = await startMirrored('  route * main --mirror shadow --mirror-body-limit 100k', engine);
        const large = crypto.randomBytes(300000);
        const small = crypto.randomBytes(1000);
        const send = async (body) => {
          if (protocol === 'h2') {
            const session = await connectH2(`http://127.0.0.1:${port}`);
            const answer = await fetchH2(session, { ':method': 'POST' }, body);
            return { status: answer.status, body: answer.body.toString() };
          }
          return upload(port, { headers: framing === 'chunked' ? {} : { 'content-length': body.length } }, pieces(body));
        };

        assert.deepEqual(await send(large), { status: 201, body: sha256(large) });
        assert.deepEqual(await send(small), { status: 201, body: sha256(small) });
        // The small body's copy arrives; the large one's never went.
        const copies = await copiesArrived(shadow, 1);
        assert.deepEqual(copies.map((copy) => copy.sha), [sha256(small)]);
        await until(() => outcomes(service, 'shadow').answered === 1, 'the small copy is answered');
        assert.deepEqual(outcomes(service, 'shadow'), { answered: 1, failed: 0, timeout: 0, too_large: 1, dropped: 0 });
      });
    }
  });

  describe('the copy', () => {
    for (const [engine, protocol] of [['fast', 'HTTP/1.1'], ['fast', 'h2'], ['node', 'HTTP/1.1']]) {
      it(`keeps its method, path (as its route edits it) and headers, with Host's -shadow before the port (--engine ${engine}, ${protocol})`, async () => {
        const { port, shadow } = await startMirrored('  route /api main --mirror shadow --strip-prefix --request-header "X-Route: api"', engine);
        const send = async (method, target, host) => {
          if (protocol === 'h2') {
            const session = await connectH2(`http://127.0.0.1:${port}`);
            const answer = await fetchH2(session, { ':method': method, ':path': target, ':authority': host, 'x-custom': 'kept' });
            return answer.status;
          }
          return (await request(port, { method, path: target, headers: { host, 'x-custom': 'kept' } })).status;
        };

        assert.equal(await send('DELETE', '/api/users/7?force=1', 'example.test'), 201);
        assert.equal(await send('GET', '/api/', 'example.test:8080'), 201);
        const copies = await copiesArrived(shadow, 2);
        const seen = copies.map(({ method, url, headers }) => ({
          method, url, host: headers.host, custom: headers['x-custom'], route: headers['x-route'], forwardedFor: headers['x-forwarded-for']
        }));
        assert.deepEqual(seen, [
          { method: 'DELETE', url: '/users/7?force=1', host: 'example.test-shadow', custom: 'kept', route: 'api', forwardedFor: '127.0.0.1' },
          { method: 'GET', url: '/', host: 'example.test-shadow:8080', custom: 'kept', route: 'api', forwardedFor: '127.0.0.1' }
        ]);
      });
    }

    it('gets -shadow after the host, before any port, as Envoy does', () => {
      assert.equal(shadowHost('example.test'), 'example.test-shadow');
      assert.equal(shadowHost('example.test:8080'), 'example.test-shadow:8080');
      assert.equal(shadowHost('10.0.0.5:80'), '10.0.0.5-shadow:80');
      assert.equal(shadowHost('[2001:db8::1]:8443'), '[2001:db8::1]-shadow:8443');
      assert.equal(shadowHost('[2001:db8::1]'), '[2001:db8::1]-shadow');
    });

    it('is dropped, and counted, when its mirror pool holds as many copies as it may', () => {
      const counted = [];
      const connections = { copies: MAX_COPIES - 1 };
      const target = { name: 'shadow', connections: () => connections };
      const traffic = { mirrored: (pool, outcome) => counted.push(`${pool} ${outcome}`) };

      assert.deepEqual(takePlace(target, traffic), { target, connections });
      assert.equal(takePlace(target, traffic), null);
      assert.deepEqual([connections.copies, counted], [MAX_COPIES, ['shadow dropped']]);
    });
  });
});
