'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const { once } = require('node:events');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startProxy,
  startLila,
  rawRequest,
  until,
  collect
} = require('./helpers');

// A backend that records every request it gets: its path, the body bytes read, and whether it ended whole.
async function recordingBackend(name, respond) {
  const requests = [];
  const server = await startHttpBackend(name, (req, res) => {
    const seen = { url: req.url, bytes: 0, complete: false, closed: false };
    requests.push(seen);
    req.on('data', (chunk) => { seen.bytes += chunk.length; });
    req.on('end', () => { seen.complete = true; });
    req.on('close', () => { seen.closed = true; });
    if (respond !== undefined) respond(req, res);
    else req.on('end', () => res.end(`${name} ${seen.bytes}`));
  });
  return Object.assign(server, { requests });
}

function chunk(size) {
  return `${size.toString(16)}\r\n${'x'.repeat(size)}\r\n`;
}

function connect(port) {
  const socket = net.connect(port, '127.0.0.1');
  onCleanup(() => socket.destroy());
  socket.on('error', () => {});
  return socket;
}

const CHUNKED_HEAD = 'POST /upload HTTP/1.1\r\nHost: lila.test\r\nTransfer-Encoding: chunked\r\n\r\n';

describe('request body limit', () => {
  afterEach(cleanup);

  for (const engine of HTTP_ENGINES) {
    describe(`${engine} engine`, () => {
      it('answers 413 to a Content-Length over --max-body-size, and forwards nothing', async () => {
        const a = await recordingBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address], maxBodySize: 1024 });

        const answer = await rawRequest(proxy.port, `POST /big HTTP/1.1\r\nHost: lila.test\r\nContent-Length: 1025\r\n\r\n${'x'.repeat(1025)}`);

        assert.match(answer, /^HTTP\/1\.1 413 Payload Too Large\r\n/);
        assert.match(answer, /\r\nConnection: close\r\n/i);
        assert.match(answer, /lila: 413 Payload Too Large: the request body is larger than 1024 bytes\n$/);
        assert.deepEqual(a.requests, []);
      });

      it('answers 413 before a 100 Continue', async () => {
        const a = await recordingBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address], maxBodySize: 1024 });

        const answer = await rawRequest(proxy.port, 'PUT /big HTTP/1.1\r\nHost: lila.test\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n');

        assert.match(answer, /^HTTP\/1\.1 413 /);
        assert.doesNotMatch(answer, /100 Continue/);
        assert.deepEqual(a.requests, []);
      });

      it('forwards a chunked body of exactly --max-body-size whole', async () => {
        const a = await recordingBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address], maxBodySize: 1024 });

        const answer = await rawRequest(proxy.port, `${CHUNKED_HEAD}${chunk(600)}${chunk(424)}0\r\n\r\n`.replace('Host:', 'Connection: close\r\nHost:'));

        assert.match(answer, /^HTTP\/1\.1 200 /);
        assert.match(answer, /A 1024$/);
        assert.deepEqual(a.requests.map(({ bytes, complete }) => ({ bytes, complete })), [{ bytes: 1024, complete: true }]);
      });

      it('aborts the upstream request of a chunked body that grows past the limit, and answers 413', async () => {
        const a = await recordingBackend('A', () => {});
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address], maxBodySize: 1024 });
        const client = connect(proxy.port);
        const received = collect(client);
        client.write(`${CHUNKED_HEAD}${chunk(600)}`);
        await until(() => a.requests.length === 1 && a.requests[0].bytes === 600, 'the backend got the first chunk');

        client.write(`${chunk(600)}${chunk(600)}`);
        const answer = String(await received);

        assert.match(answer, /^HTTP\/1\.1 413 Payload Too Large\r\n/);
        await until(() => a.requests[0].closed, 'the backend saw its request end');
        assert.equal(a.requests[0].complete, false);
        assert.ok(a.requests[0].bytes <= 1024, `${a.requests[0].bytes} bytes reached the backend`);
        await until(() => proxy.backends[0].active === 0, 'the backend is released');
      });

      it('cuts the client whose chunked body grows past the limit once the response has begun', async () => {
        const a = await recordingBackend('A', (req, res) => {
          res.writeHead(200, { 'Content-Type': 'text/plain' });
          res.write('started');
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address], maxBodySize: 1024 });
        const client = connect(proxy.port);
        let answer = '';
        client.on('data', (data) => { answer += data; });
        client.write(`${CHUNKED_HEAD}${chunk(600)}`);
        await until(() => answer.includes('started'), 'the response began');

        client.write(`${chunk(600)}`);
        await once(client, 'close');

        assert.match(answer, /^HTTP\/1\.1 200 /);
        assert.doesNotMatch(answer, /\r\n0\r\n\r\n$/, 'the response is visibly cut short');
        await until(() => a.requests[0].closed, 'the upstream request is abandoned');
        assert.equal(a.requests[0].complete, false);
      });
    });
  }

  it('reads --max-body-size with a k suffix from the command line', async () => {
    const a = await recordingBackend('A');
    const lila = await startLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0', '--max-body-size', '2k']);

    const small = await rawRequest(lila.port, `POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2048\r\n\r\n${'x'.repeat(2048)}`);
    const large = await rawRequest(lila.port, `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2049\r\n\r\n${'x'.repeat(2049)}`);

    assert.match(small, /^HTTP\/1\.1 200 [\s\S]*A 2048$/);
    assert.match(large, /^HTTP\/1\.1 413 /);
    assert.equal(a.requests.length, 1);
  });
});
