'use strict';

const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const tls = require('node:tls');
const { once } = require('node:events');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { parseProxyHeader, proxyHeaderV1, proxyHeaderV2 } = require('../lib/net/proxy-protocol');
const { Pki } = require('./pki');
const { findExecutable, startPeer } = require('./peers');
const { skipPeersOff } = require('./tools');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  collect,
  until
} = require('./helpers');

const HAPROXY = findExecutable('haproxy');
const NGINX = findExecutable('nginx');
const CLIENT = { address: '203.0.113.7', port: 40001 };

/**
 * Opens a connection to lila, sends `bytes` and half-closes, and resolves
 * with everything lila sent back until it closed.
 */
async function exchange(port, bytes, options = {}) {
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true, ...options });
  onCleanup(() => socket.destroy());
  socket.on('error', () => {});
  socket.end(bytes);
  return (await collect(socket).catch(() => Buffer.alloc(0))).toString('latin1');
}

// An http backend that answers with the X-Forwarded-For and Forwarded it got.
function startEchoBackend(name) {
  return startHttpBackend(name, (req, res) => {
    req.resume();
    res.end(`${name} ${req.headers['x-forwarded-for']} ${req.headers.forwarded}`);
  });
}

/**
 * A backend that takes a PROXY v1 line first on every connection, as nginx's
 * `proxy_protocol` does, read here by hand: it records, per connection, the
 * line and every request served on it.
 */
async function startProxiedBackend() {
  const connections = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.socket.record.requests.push(req.url);
    res.end('ok');
  });
  const listener = net.createServer((socket) => {
    const record = { line: null, requests: [] };
    connections.push(record);
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    const onData = (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n');
      if (end === -1) return;
      socket.removeListener('data', onData);
      record.line = buffered.toString('latin1', 0, end);
      socket.pause();
      socket.unshift(buffered.subarray(end + 2));
      socket.record = record;
      server.emit('connection', socket);
      socket.resume();
    };
    socket.on('data', onData);
  });
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  onCleanup(() => {
    server.closeAllConnections();
    return new Promise((resolve) => listener.close(resolve));
  });
  return { connections, address: `127.0.0.1:${listener.address().port}` };
}

/**
 * A backend behind `send-proxy` or `send-proxy-v2`: it reads the PROXY header
 * each connection starts with, decoded here by hand (v1: its line; v2: the
 * command, the family byte, and both ends as text), then serves the rest as
 * an http backend answering `A`, or as a tcp backend writing `A` and closing.
 *
 * @param {'http' | 'tcp'} layer
 * @returns {Promise<{headers: object[], address: string}>}
 */
async function startHeaderBackend(layer) {
  const headers = [];
  const server = http.createServer((req, res) => {
    req.resume();
    res.end('A');
  });
  const listener = net.createServer((socket) => {
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    const onData = (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      const header = decodeHeader(buffered);
      if (header === null) return;
      socket.removeListener('data', onData);
      headers.push(header);
      if (layer === 'tcp') {
        socket.end('A');
        return;
      }
      socket.pause();
      socket.unshift(buffered.subarray(header.length));
      server.emit('connection', socket);
      socket.resume();
    };
    socket.on('data', onData);
  });
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  onCleanup(() => {
    server.closeAllConnections();
    return new Promise((resolve) => listener.close(resolve));
  });
  return { headers, address: `127.0.0.1:${listener.address().port}` };
}

// A PROXY header at the start of `buffer`, decoded without lila's parser; null until it is whole.
function decodeHeader(buffer) {
  if (buffer.length < 16) return null;
  if (buffer.toString('latin1', 0, 6) === 'PROXY ') {
    const end = buffer.indexOf('\r\n');
    return end === -1 ? null : { length: end + 2, line: buffer.toString('latin1', 0, end) };
  }
  const length = 16 + buffer.readUInt16BE(14);
  if (buffer.length < length) return null;
  const family = buffer[13];
  const text = (at, size) => (size === 4
    ? [...buffer.subarray(at, at + 4)].join('.')
    : new net.SocketAddress({ address: buffer.toString('hex', at, at + 16).match(/.{4}/g).join(':'), family: 'ipv6' }).address);
  const size = family === 0x11 ? 4 : family === 0x21 ? 16 : 0;
  const header = { length, command: buffer[12] === 0x21 ? 'PROXY' : buffer[12] === 0x20 ? 'LOCAL' : buffer[12], family };
  if (size === 0) return header;
  return {
    ...header,
    source: `${text(16, size)} ${buffer.readUInt16BE(16 + 2 * size)}`,
    destination: `${text(16 + size, size)} ${buffer.readUInt16BE(18 + 2 * size)}`
  };
}

/**
 * A v2 header with the given version/command and family/transport bytes and
 * an address block of `length` zero bytes.
 */
function v2Head(versionCommand, family, length) {
  const head = Buffer.alloc(16 + length);
  Buffer.from('0d0a0d0a000d0a515549540a', 'hex').copy(head);
  head[12] = versionCommand;
  head[13] = family;
  head.writeUInt16BE(length, 14);
  return head;
}

describe('PROXY protocol', function () {
  this.timeout(20000);
  afterEach(cleanup);

  describe('parseProxyHeader', () => {
    const v2 = proxyHeaderV2(CLIENT, { address: '10.0.0.1', port: 443 });
    const cases = [
      ['v1 TCP4', Buffer.from('PROXY TCP4 203.0.113.7 10.0.0.1 40001 443\r\nGET'), { length: 43, source: CLIENT }],
      ['v1 TCP6', Buffer.from('PROXY TCP6 2001:db8::7 2001:db8::1 40001 443\r\n'), { length: 46, source: { address: '2001:db8::7', port: 40001 } }],
      ['v1 UNKNOWN', Buffer.from('PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n'), { length: 35, source: null }],
      ['v2 INET', v2, { length: 28, source: CLIENT }],
      ['v2 INET6', proxyHeaderV2({ address: '2001:db8::7', port: 1 }, { address: '::1', port: 2 }), { length: 52, source: { address: '2001:db8::7', port: 1 } }],
      ['v2 LOCAL', proxyHeaderV2(null, null), { length: 16, source: null }],
      ['no header', Buffer.from('GET / HTTP/1.1\r\n'), { error: 'no PROXY protocol header' }],
      ['a v1 line over 107 bytes', Buffer.from(`PROXY TCP4 ${'1'.repeat(110)}`), { error: 'a PROXY v1 line longer than 107 bytes' }],
      ['a v1 line with a bad address', Buffer.from('PROXY TCP4 203.0.113 10.0.0.1 1 2\r\n'), { error: 'an invalid PROXY v1 line' }],
      ['a v1 line with a port over 65535', Buffer.from('PROXY TCP4 1.2.3.4 10.0.0.1 65536 2\r\n'), { error: 'an invalid PROXY v1 line' }],
      ['a v1 line ended by a bare LF', Buffer.from('PROXY TCP4 1.2.3.4\n'), { error: 'an invalid PROXY v1 line' }],
      ['a bad v2 signature', Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0b]), { error: 'a bad PROXY v2 signature' }],
      ['v2 version 3', Buffer.concat([v2.subarray(0, 12), Buffer.from([0x31, 0x11, 0, 12])]), { error: 'an unknown PROXY protocol version 3' }],
      ['v2 command 2', Buffer.concat([v2.subarray(0, 12), Buffer.from([0x22, 0x11, 0, 12])]), { error: 'an unknown PROXY v2 command 2' }],
      ['v2 family 4', v2Head(0x21, 0x41, 12), { error: 'an unknown PROXY v2 address family 0x41' }],
      ['v2 INET with a length of 4', v2Head(0x21, 0x11, 4), { error: 'a PROXY v2 header too short for its addresses' }],
      ['v1 TCP6 in capitals, as its canonical text', Buffer.from('PROXY TCP6 2001:DB8:0:0::7 ::1 40001 443\r\n'), { length: 42, source: { address: '2001:db8::7', port: 40001 } }],
      ['v1 TCP6 with an IPv4-mapped source', Buffer.from('PROXY TCP6 ::ffff:203.0.113.7 ::1 40001 443\r\n'), { length: 45, source: { address: '::ffff:203.0.113.7', port: 40001 } }],
      ['a v1 line with a zone index', Buffer.from('PROXY TCP6 fe80::7%eth0 fe80::1 40001 443\r\n'), { error: 'an invalid PROXY v1 line' }],
      ['a v1 line with a byte that is not US-ASCII', Buffer.from('PROXY UNKNOWN \xe9\r\n', 'latin1'), { error: 'an invalid PROXY v1 line' }],
      ['a v1 line with an LF before its CRLF', Buffer.from('PROXY UNKNOWN \n\r\n'), { error: 'an invalid PROXY v1 line' }],
      ['a v1 line with a bare CR', Buffer.from('PROXY UNKNOWN\rX'), { error: 'an invalid PROXY v1 line' }],
      // The family/transport byte's high nibble is the family (1 INET, 2 INET6, 3 UNIX), its low one
      // the transport (1 STREAM, 2 DGRAM): any other byte is invalid (the spec, section 2.2).
      ['v2 PROXY over a UNIX stream socket', v2Head(0x21, 0x31, 216), { error: 'a PROXY v2 header naming a UNIX socket (family 0x31), not a client address' }],
      ['v2 PROXY over a UNIX datagram socket', v2Head(0x21, 0x32, 216), { error: 'a PROXY v2 header naming a UNIX socket (family 0x32), not a client address' }],
      ['v2 LOCAL over a UNIX stream socket', v2Head(0x20, 0x31, 216), { length: 232, source: null }],
      ['v2 LOCAL with an INET family and no addresses', v2Head(0x20, 0x11, 0), { length: 16, source: null }],
      ['v2 family 0x13 (INET over transport 3)', v2Head(0x21, 0x13, 12), { error: 'an unknown PROXY v2 address family 0x13' }],
      ['v2 family 0x14', v2Head(0x21, 0x14, 12), { error: 'an unknown PROXY v2 address family 0x14' }],
      ['v2 family 0x01 (UNSPEC over STREAM)', v2Head(0x21, 0x01, 0), { error: 'an unknown PROXY v2 address family 0x01' }],
      ['v2 PROXY with UNSPEC, which keeps the real peer', v2Head(0x21, 0x00, 0), { length: 16, source: null }]
    ];
    for (const [name, buffer, expected] of cases) {
      it(`reads ${name}`, () => assert.deepEqual(parseProxyHeader(buffer), expected));
    }

    // name, source, destination: the v1 line, and the v2 family byte and source address bytes.
    const written = [
      ['IPv4 to IPv4', '203.0.113.7', '10.0.0.1', 'PROXY TCP4 203.0.113.7 10.0.0.1 40001 443', 0x11, 'cb007107'],
      ['IPv6 to IPv6', '2001:db8::7', '::1', 'PROXY TCP6 2001:db8::7 ::1 40001 443', 0x21, '20010db8000000000000000000000007'],
      ['IPv6 to IPv4 (an IPv6 client named by a header, lila on IPv4)', '2001:db8::7', '127.0.0.1', 'PROXY TCP6 2001:db8::7 ::ffff:127.0.0.1 40001 443', 0x21, '20010db8000000000000000000000007'],
      ['IPv4 to IPv6', '203.0.113.7', '::1', 'PROXY TCP6 ::ffff:203.0.113.7 ::1 40001 443', 0x21, '00000000000000000000ffffcb007107'],
      ['link-local addresses without their zone index', 'fe80::7%eth0', 'fe80::1%eth0', 'PROXY TCP6 fe80::7 fe80::1 40001 443', 0x21, 'fe800000000000000000000000000007']
    ];
    for (const [name, from, to, line, family, source] of written) {
      it(`writes ${name}: ${line}`, () => {
        const v1 = proxyHeaderV1({ address: from, port: 40001 }, { address: to, port: 443 });
        const v2 = proxyHeaderV2({ address: from, port: 40001 }, { address: to, port: 443 });

        assert.equal(v1.toString('latin1'), `${line}\r\n`);
        assert.equal(v2[12], 0x21);
        assert.equal(v2[13], family);
        assert.equal(v2.toString('hex', 16, 16 + source.length / 2), source);
        assert.equal(parseProxyHeader(v1).length, v1.length);
        assert.equal(parseProxyHeader(v2).length, v2.length);
      });
    }

    it('writes UNKNOWN and LOCAL when an end is unknown', () => {
      for (const [from, to] of [[null, null], [{ address: '2001:db8::7', port: 1 }, null], [{ address: undefined, port: undefined }, { address: '::1', port: 2 }]]) {
        assert.equal(proxyHeaderV1(from, to).toString(), 'PROXY UNKNOWN\r\n');
        assert.deepEqual(proxyHeaderV2(from, to), v2Head(0x20, 0x00, 0));
      }
    });

    it('waits for more at every byte of a whole header, and is done at its last', () => {
      for (const header of [proxyHeaderV1(CLIENT, { address: '10.0.0.1', port: 443 }), v2]) {
        for (let i = 0; i < header.length; i++) assert.equal(parseProxyHeader(header.subarray(0, i)), null, `${i} bytes`);
        assert.equal(parseProxyHeader(header).length, header.length);
      }
    });
  });

  describe('accepting (--accept-proxy)', () => {
    for (const engine of HTTP_ENGINES) {
      it(`takes the client from a v1 or v2 header, and the real peer from a LOCAL one (${engine} engine)`, async () => {
        const a = await startEchoBackend('A');
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address], acceptProxy: true });
        const request = 'GET / HTTP/1.1\r\nHost: lila\r\nConnection: close\r\n\r\n';
        const to = { address: '127.0.0.1', port: proxy.port };

        const v1 = await exchange(proxy.port, Buffer.concat([proxyHeaderV1(CLIENT, to), Buffer.from(request)]));
        const v2 = await exchange(proxy.port, Buffer.concat([proxyHeaderV2({ address: '2001:db8::7', port: 1 }, { address: '::1', port: 2 }), Buffer.from(request)]));
        const local = await exchange(proxy.port, Buffer.concat([proxyHeaderV2(null, null), Buffer.from(request)]));

        assert.ok(v1.endsWith('\r\n\r\nA 203.0.113.7 for=203.0.113.7;host=lila;proto=http'), v1);
        assert.ok(v2.endsWith('\r\n\r\nA 2001:db8::7 for="[2001:db8::7]";host=lila;proto=http'), v2);
        assert.ok(local.endsWith('\r\n\r\nA 127.0.0.1 for=127.0.0.1;host=lila;proto=http'), local);
      });
    }

    it('balances ip-hash by the address the header gives', async () => {
      const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const proxy = await startProxy({ mode: 'ip-hash', servers: backends.map((b) => `${b.address},name=${b.name}`), acceptProxy: true });
      const to = { address: '127.0.0.1', port: proxy.port };

      const seen = [];
      const expected = [];
      for (let i = 1; i <= 12; i++) {
        const address = `198.51.100.${i}`;
        const answer = await exchange(proxy.port, Buffer.concat([
          proxyHeaderV1({ address, port: 1000 + i }, to), Buffer.from('GET / HTTP/1.1\r\nHost: lila\r\nConnection: close\r\n\r\n')
        ]));
        seen.push(answer.slice(-1));
        expected.push(proxy.balancer.pick({ clientAddress: address }).name);
      }

      assert.deepEqual(seen, expected);
      assert.ok(new Set(seen).size > 1, `every address went to ${seen[0]}`);
    });

    for (const layer of ['http', 'tcp']) {
      it(`closes a connection without a header, or with a garbage or cut header at every byte, and keeps serving (${layer})`, async () => {
        const a = layer === 'http' ? await startHttpBackend('A') : await startTcpBackend('A');
        const proxy = await startProxy({ mode: 'round-robin', layer, servers: [a.address], acceptProxy: true });
        const to = { address: '127.0.0.1', port: proxy.port };
        const whole = proxyHeaderV2(CLIENT, to);

        const answers = [await exchange(proxy.port, 'GET / HTTP/1.1\r\nHost: lila\r\n\r\n')];
        for (let i = 1; i < whole.length; i++) answers.push(await exchange(proxy.port, whole.subarray(0, i)));
        answers.push(await exchange(proxy.port, Buffer.concat([whole.subarray(0, 13), Buffer.from([0x99]), whole.subarray(14)])));
        answers.push(await exchange(proxy.port, `PROXY TCP4 ${'9'.repeat(120)}\r\n`));
        const fine = await exchange(proxy.port, Buffer.concat([whole, Buffer.from('GET / HTTP/1.1\r\nHost: lila\r\nConnection: close\r\n\r\n')]));

        assert.deepEqual(answers.filter((answer) => answer !== ''), []);
        assert.equal(proxy.listener.traffic.proxyHeaderFailures, answers.length);
        assert.ok(fine.endsWith('A'), fine);
      });
    }

    it('closes a connection whose header does not arrive within --header-timeout', async () => {
      const a = await startHttpBackend('A');
      const proxy = await startProxy({ mode: 'round-robin', servers: [a.address], acceptProxy: true, headerTimeout: 200 });
      const socket = net.connect(proxy.port, '127.0.0.1');
      onCleanup(() => socket.destroy());
      socket.on('error', () => {});

      socket.write('PROXY TCP4 203.0.113.7');
      const started = performance.now();
      await once(socket, 'close');

      assert.ok(performance.now() - started >= 150);
      assert.equal(proxy.listener.traffic.proxyHeaderFailures, 1);
    });

    for (const [layer, engine] of [['http', 'fast'], ['http', 'node'], ['tcp', undefined]]) {
      it(`reads the header before the TLS handshake (${layer}${engine ? `, ${engine} engine` : ''})`, async () => {
        const pki = new Pki();
        onCleanup(() => pki.remove());
        const certificate = pki.issue({ names: ['lila.test'] });
        const backend = layer === 'http'
          ? await startEchoBackend('A')
          : await startTcpBackend('A', (socket) => socket.end('A'));
        const proxy = await startProxy({
          mode: 'round-robin', layer, engine, servers: [backend.address], acceptProxy: true,
          tls: { certificates: [{ cert: certificate.combinedFile }] }
        });

        const raw = net.connect(proxy.port, '127.0.0.1');
        onCleanup(() => raw.destroy());
        raw.write(proxyHeaderV1(CLIENT, { address: '127.0.0.1', port: proxy.port }));
        const client = tls.connect({ socket: raw, servername: 'lila.test', ca: pki.ca });
        await once(client, 'secureConnect');
        client.end(layer === 'http' ? 'GET / HTTP/1.1\r\nHost: lila\r\nConnection: close\r\n\r\n' : 'hello');
        const answer = (await collect(client)).toString();

        if (layer === 'http') assert.ok(answer.endsWith('A 203.0.113.7 for=203.0.113.7;host=lila;proto=https'), answer);
        else assert.equal(answer, 'A');
        assert.equal(proxy.listener.traffic.tlsHandshakes, 1);
      });
    }
  });

  describe('sending (send-proxy)', () => {
    for (const engine of HTTP_ENGINES) {
      it(`never lets two clients share a connection that carried a header (${engine} engine)`, async () => {
        const backend = await startProxiedBackend();
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [`${backend.address},send-proxy`] });
        const agents = ['127.0.0.2', '127.0.0.3'].map((localAddress) => new http.Agent({ keepAlive: true, maxSockets: 1, localAddress }));
        onCleanup(() => agents.forEach((agent) => agent.destroy()));

        for (let i = 0; i < 4; i++) {
          for (const [n, agent] of agents.entries()) {
            const res = await new Promise((resolve, reject) => {
              http.get({ host: '127.0.0.1', port: proxy.port, agent, path: `/client-${n}` }, resolve).on('error', reject);
            });
            res.resume();
            await once(res, 'end');
          }
        }

        assert.equal(backend.connections.reduce((sum, c) => sum + c.requests.length, 0), 8);
        for (const { line, requests } of backend.connections) {
          const client = requests[0] === '/client-0' ? '127.0.0.2' : '127.0.0.3';
          assert.match(line, new RegExp(`^PROXY TCP4 ${client.replace(/\./g, '\\.')} 127\\.0\\.0\\.1 \\d+ ${proxy.port}$`));
          assert.deepEqual(new Set(requests).size, 1, `one connection served ${[...new Set(requests)]}`);
        }
      });
    }

    it('sends the client to a tcp backend first, and UNKNOWN with health checks', async () => {
      const backend = await startProxiedBackend();
      const proxy = await startProxy({
        mode: 'round-robin', layer: 'tcp', servers: [backend.address], sendProxy: 'v1',
        healthCheck: true, healthInterval: 50
      });
      await until(() => backend.connections.length > 0, 'a health check');

      const answer = await exchange(proxy.port, 'GET /through HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', { localAddress: '127.0.0.4' });
      await until(() => backend.connections.some((c) => c.requests.includes('/through')), 'the request');

      assert.match(answer, /^HTTP\/1\.1 200 OK/);
      assert.equal(backend.connections[0].line, 'PROXY UNKNOWN');
      assert.match(backend.connections.find((c) => c.requests.includes('/through')).line, new RegExp(`^PROXY TCP4 127\\.0\\.0\\.4 127\\.0\\.0\\.1 \\d+ ${proxy.port}$`));
    });
  });

  describe('passing an IPv6 client on (--accept-proxy, then send-proxy)', () => {
    const IPV6_CLIENT = { address: '2001:db8::7', port: 40001 };
    const request = 'GET / HTTP/1.1\r\nHost: lila\r\nConnection: close\r\n\r\n';
    const layers = [['http', 'fast'], ['http', 'node'], ['tcp', undefined]];

    for (const [layer, engine] of layers) {
      const where = `${layer}${engine ? `, ${engine} engine` : ''}`;

      it(`tells a send-proxy backend the IPv6 client of a v1 TCP6 or v2 INET6 header (${where})`, async () => {
        const backend = await startHeaderBackend(layer);
        const proxy = await startProxy({ mode: 'round-robin', layer, engine, servers: [`${backend.address},send-proxy`], acceptProxy: true });
        const to = { address: '2001:db8::1', port: 443 };

        const v1 = await exchange(proxy.port, Buffer.concat([Buffer.from('PROXY TCP6 2001:db8::7 2001:db8::1 40001 443\r\n'), Buffer.from(request)]));
        const v2 = await exchange(proxy.port, Buffer.concat([proxyHeaderV2(IPV6_CLIENT, to), Buffer.from(request)]));

        assert.ok(v1.endsWith('A') && v2.endsWith('A'), `${v1}\n${v2}`);
        // lila's own address is the destination: IPv4, so mapped into IPv6 beside the client.
        assert.deepEqual(backend.headers.map((header) => header.line), [
          `PROXY TCP6 2001:db8::7 ::ffff:127.0.0.1 40001 ${proxy.port}`,
          `PROXY TCP6 2001:db8::7 ::ffff:127.0.0.1 40001 ${proxy.port}`
        ]);
      });

      it(`tells a send-proxy-v2 backend the IPv6 client of a v1 TCP6 or v2 INET6 header (${where})`, async () => {
        const backend = await startHeaderBackend(layer);
        const proxy = await startProxy({ mode: 'round-robin', layer, engine, servers: [`${backend.address},send-proxy-v2`], acceptProxy: true });
        const to = { address: '2001:db8::1', port: 443 };

        const v1 = await exchange(proxy.port, Buffer.concat([Buffer.from('PROXY TCP6 2001:db8::7 2001:db8::1 40001 443\r\n'), Buffer.from(request)]));
        const v2 = await exchange(proxy.port, Buffer.concat([proxyHeaderV2(IPV6_CLIENT, to), Buffer.from(request)]));

        assert.ok(v1.endsWith('A') && v2.endsWith('A'), `${v1}\n${v2}`);
        const expected = { length: 52, command: 'PROXY', family: 0x21, source: '2001:db8::7 40001', destination: `::ffff:127.0.0.1 ${proxy.port}` };
        assert.deepEqual(backend.headers, [expected, expected]);
      });

      it(`closes a connection whose v2 header names a UNIX socket, and serves one whose LOCAL header does (${where})`, async () => {
        const backend = await startHeaderBackend(layer);
        const proxy = await startProxy({ mode: 'round-robin', layer, engine, servers: [`${backend.address},send-proxy`], acceptProxy: true });
        const unix = (command, family) => Buffer.concat([v2Head(command, family, 216), Buffer.from(request)]);

        const refused = [await exchange(proxy.port, unix(0x21, 0x31)), await exchange(proxy.port, unix(0x21, 0x32))];
        const local = await exchange(proxy.port, unix(0x20, 0x31));

        assert.deepEqual(refused, ['', '']);
        assert.equal(proxy.listener.traffic.proxyHeaderFailures, 2);
        assert.ok(local.endsWith('A'), local);
        // LOCAL keeps the real peer.
        assert.deepEqual(backend.headers.map((header) => header.line.replace(/ \d+ /, ' <port> ')), [`PROXY TCP4 127.0.0.1 127.0.0.1 <port> ${proxy.port}`]);
      });
    }
  });

  describe('with real peers', () => {
    before(function () {
      skipPeersOff(this, 'HAProxy');
      if (HAPROXY !== null && NGINX !== null) return;
      if (process.env.LILA_REQUIRE_HAPROXY === '1') {
        throw new Error('LILA_REQUIRE_HAPROXY=1 but haproxy or nginx was not found; install them (apt-get install haproxy nginx-light)');
      }
      this.skip();
    });

    for (const version of ['send-proxy', 'send-proxy-v2']) {
      it(`takes the client's address from HAProxy's ${version}, and closes connections that come without`, async () => {
        const a = await startEchoBackend('A');
        const proxy = await startProxy({ mode: 'round-robin', servers: [a.address], acceptProxy: true });
        const haproxy = await startPeer({
          executable: HAPROXY,
          configure: (dir, port) => ({
            config: `global\n  maxconn 64\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n` +
              `frontend front\n  bind 127.0.0.1:${port}\n  default_backend lila\n` +
              `backend lila\n  server lila 127.0.0.1:${proxy.port} ${version}\n`,
            args: ['-db', '-f', `${dir}/peer.conf`]
          })
        });

        const through = await exchange(haproxy.port, 'GET / HTTP/1.1\r\nHost: lila\r\nConnection: close\r\n\r\n', { localAddress: '127.0.0.5' });
        const direct = await exchange(proxy.port, 'GET / HTTP/1.1\r\nHost: lila\r\nConnection: close\r\n\r\n');

        assert.ok(through.endsWith('A 127.0.0.5 for=127.0.0.5;host=lila;proto=http'), through);
        assert.equal(direct, '');
      });
    }

    it('judges --allow and --deny by the client HAProxy names, not by HAProxy\'s own address', async () => {
      const a = await startEchoBackend('A');
      // HAProxy connects to lila from 127.0.0.1: only the PROXY header tells 127.0.0.5 from 127.0.0.7.
      const proxy = await startProxy({
        mode: 'round-robin', servers: [a.address], acceptProxy: true, actions: { allow: ['127.0.0.0/8'], deny: ['127.0.0.7'] }
      });
      const haproxy = await startPeer({
        executable: HAPROXY,
        configure: (dir, port) => ({
          config: `global\n  maxconn 64\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n` +
            `frontend front\n  bind 127.0.0.1:${port}\n  default_backend lila\n` +
            `backend lila\n  server lila 127.0.0.1:${proxy.port} send-proxy-v2\n`,
          args: ['-db', '-f', `${dir}/peer.conf`]
        })
      });
      const from = (localAddress) => exchange(haproxy.port, 'GET / HTTP/1.1\r\nHost: lila\r\nConnection: close\r\n\r\n', { localAddress });

      const allowed = await from('127.0.0.5');
      const denied = await from('127.0.0.7');

      assert.match(allowed, /^HTTP\/1\.1 200 OK/);
      assert.match(denied, /^HTTP\/1\.1 403 Forbidden/);
      assert.match(denied, /client 127\.0\.0\.7 is not allowed on route "\*"/);
    });

    for (const [layer, sendProxy] of [['http', 'v1'], ['http', 'v2'], ['tcp', 'v1'], ['tcp', 'v2']]) {
      it(`tells nginx the client with --send-proxy ${sendProxy} (${layer})`, async () => {
        const nginx = await startNginx();
        const proxy = await startProxy({ mode: 'round-robin', layer, servers: [`127.0.0.1:${nginx.port}`], sendProxy });

        const answer = await exchange(proxy.port, 'GET / HTTP/1.1\r\nHost: lila\r\nConnection: close\r\n\r\n', { localAddress: '127.0.0.6' });

        assert.match(answer, /^HTTP\/1\.1 200 OK/);
        assert.ok(answer.endsWith('\r\n\r\n127.0.0.6'), answer);
      });
    }

    for (const [layer, sendProxy] of [['http', 'v1'], ['tcp', 'v2']]) {
      it(`tells nginx an IPv6 client a header named, with --send-proxy ${sendProxy} (${layer})`, async () => {
        const nginx = await startNginx();
        const proxy = await startProxy({ mode: 'round-robin', layer, servers: [`127.0.0.1:${nginx.port}`], sendProxy, acceptProxy: true });
        const header = proxyHeaderV2({ address: '2001:db8::7', port: 40001 }, { address: '2001:db8::1', port: 443 });

        const answer = await exchange(proxy.port, Buffer.concat([header, Buffer.from('GET / HTTP/1.1\r\nHost: lila\r\nConnection: close\r\n\r\n')]));

        assert.match(answer, /^HTTP\/1\.1 200 OK/);
        assert.ok(answer.endsWith('\r\n\r\n2001:db8::7'), answer);
      });
    }

    // nginx answering every request with the client its PROXY header named.
    function startNginx() {
      return startPeer({
        executable: NGINX,
        configure: (dir, port) => ({
          config: `worker_processes 1;\nmaster_process off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log warn;\n` +
            `events { worker_connections 64; }\nhttp {\n  access_log off;\n  client_body_temp_path ${dir}/cb;\n  proxy_temp_path ${dir}/p;\n` +
            `  fastcgi_temp_path ${dir}/f;\n  uwsgi_temp_path ${dir}/u;\n  scgi_temp_path ${dir}/s;\n` +
            `  server {\n    listen 127.0.0.1:${port} proxy_protocol;\n    location / { return 200 "$proxy_protocol_addr"; }\n  }\n}\n`,
          args: ['-p', dir, '-c', `${dir}/peer.conf`, '-e', `${dir}/error.log`, '-g', 'daemon off;']
        })
      });
    }
  });
});
