'use strict';

// net/http-exchange.js: the HTTP exchange lila's own clients share (acme/transport.js,
// store/etcd-call.js, kubernetes/kube-client.js), against http servers on 127.0.0.1.

const assert = require('node:assert/strict');
const http = require('node:http');
const https = require('node:https');
const { exchange, jsonExchange } = require('../lib/net/http-exchange');
const { cleanup, onCleanup, refusingPort, startHttpBackend } = require('./helpers');

const LIMITS = { timeout: 2000, maxBody: 1024 };

describe('HTTP exchange', () => {
  afterEach(cleanup);

  function agent() {
    const made = new http.Agent({ keepAlive: true });
    onCleanup(() => made.destroy());
    return made;
  }

  const to = (server, options = {}) => ({ host: '127.0.0.1', port: server.port, path: '/', agent: agent(), ...options });

  it('resolves any status with its headers and whole body', async () => {
    const server = await startHttpBackend('A', (req, res) => {
      res.writeHead(503, { 'x-name': 'A' });
      res.write('not ');
      res.end('now');
    });
    const answer = await exchange(http, to(server), null, LIMITS);
    assert.equal(answer.status, 503);
    assert.equal(answer.headers['x-name'], 'A');
    assert.equal(answer.body.toString(), 'not now');
  });

  it('sends JSON with its type and length, and reads a JSON answer (undefined when it is not JSON)', async () => {
    const seen = [];
    const server = await startHttpBackend('A', (req, res) => {
      const chunks = [];
      req.on('data', (chunk) => chunks.push(chunk));
      req.on('end', () => {
        seen.push({ type: req.headers['content-type'], length: req.headers['content-length'], body: Buffer.concat(chunks).toString() });
        res.end(req.url === '/json' ? '{"ok":true}' : 'plain');
      });
    });
    assert.deepEqual(await jsonExchange(http, to(server, { method: 'POST', path: '/json' }), { a: 'ä' }, LIMITS, 'application/merge-patch+json'),
      { status: 200, text: '{"ok":true}', json: { ok: true } });
    assert.deepEqual(await jsonExchange(http, to(server, { method: 'GET', path: '/text' }), undefined, LIMITS),
      { status: 200, text: 'plain', json: undefined });
    assert.deepEqual(seen, [
      { type: 'application/merge-patch+json', length: String(Buffer.byteLength('{"a":"ä"}')), body: '{"a":"ä"}' },
      { type: undefined, length: undefined, body: '' }
    ]);
  });

  it('fails past its deadline for the whole exchange, even while bytes trickle in', async () => {
    const server = await startHttpBackend('A', (req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write('.'), 20);
      res.on('close', () => clearInterval(timer));
    });
    await assert.rejects(exchange(http, to(server), null, { ...LIMITS, timeout: 200 }),
      { phase: 'deadline', code: 'ETIMEDOUT', message: 'no answer within 200 ms' });
  });

  it('fails on an answer over its limit, one cut short, and a refused connection, saying which', async () => {
    const server = await startHttpBackend('A', (req, res) => {
      if (req.url === '/large') return res.end('x'.repeat(2048));
      res.writeHead(200, { 'content-length': 100 });
      res.write('partial');
      setImmediate(() => res.destroy());
    });
    await assert.rejects(exchange(http, to(server, { path: '/large' }), null, LIMITS), { phase: 'size', message: 'an answer over 1024 bytes' });
    await assert.rejects(exchange(http, to(server, { path: '/cut' }), null, LIMITS), { phase: 'answer', message: /^the answer was cut \(/ });
    const port = await refusingPort();
    await assert.rejects(exchange(http, { host: '127.0.0.1', port, agent: agent() }, null, LIMITS), { phase: 'send', code: 'ECONNREFUSED' });
  });

  it('sends a request again, once, on a new connection when the kept-alive one was closed', async () => {
    const served = new WeakMap();
    let requests = 0;
    const server = await startHttpBackend('A', (req, res) => {
      requests++;
      const count = (served.get(req.socket) || 0) + 1;
      served.set(req.socket, count);
      // The second request on a connection finds it closed, as after the server's idle timeout.
      if (count === 2) req.socket.destroy();
      else res.end('fine');
    });
    const options = to(server);
    assert.equal((await exchange(http, options, null, LIMITS)).body.toString(), 'fine');
    assert.equal((await exchange(http, options, null, LIMITS)).body.toString(), 'fine');
    assert.equal(requests, 3);
  });

  it('stays in `pending` while it runs, and rejects with what ended it', async () => {
    const server = await startHttpBackend('A', () => {});
    const pending = new Set();
    const running = exchange(http, to(server), null, { ...LIMITS, pending });
    assert.equal(pending.size, 1);
    const closed = new Error('closed');
    for (const end of pending) end(closed);
    await assert.rejects(running, (err) => err === closed);
    assert.equal(pending.size, 0);
  });

  it('says `setup` when the request cannot be made (TLS options that do not load)', async () => {
    await assert.rejects(exchange(https, { host: '127.0.0.1', port: 1, key: 'not a key', cert: 'not a certificate', agent: false }, null, LIMITS),
      { phase: 'setup' });
  });
});
