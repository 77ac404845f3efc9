'use strict';

const assert = require('node:assert/strict');
const dgram = require('node:dgram');
const { once } = require('node:events');
const { cleanup, onCleanup, startProxy, refusingPort, until } = require('./helpers');

/**
 * A udp backend on 127.0.0.1:0 that answers every datagram with its name, a
 * colon and the datagram; `answers` replies per datagram (0: silent).
 *
 * @param {string} name
 * @param {{answers?: number, echo?: boolean}} [options] echo: the datagram alone, without the name
 */
async function startUdpBackend(name, { answers = 1, echo = false } = {}) {
  const socket = dgram.createSocket('udp4');
  const backend = { name, socket, port: 0, received: [], peers: new Set() };
  socket.on('message', (data, from) => {
    backend.received.push(data);
    backend.peers.add(from.port);
    const reply = echo ? data : Buffer.concat([Buffer.from(`${name}:`), data]);
    for (let i = 0; i < answers; i++) socket.send(reply, from.port, from.address);
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  backend.port = socket.address().port;
  backend.address = `127.0.0.1:${backend.port}`;
  onCleanup(() => socket.close());
  return backend;
}

/** A client socket on 127.0.0.1: `ask` sends a datagram and resolves with the next reply and where it came from. */
async function client(port) {
  const socket = dgram.createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  onCleanup(() => socket.close());
  return {
    socket,
    async ask(data) {
      const reply = once(socket, 'message');
      socket.send(data, port, '127.0.0.1');
      const [message, from] = await reply;
      return { text: String(message), data: message, from };
    }
  };
}

function udpProxy(servers, options = {}) {
  return startProxy({ mode: 'round-robin', servers, layer: 'udp', ...options });
}

describe('udp layer', () => {
  afterEach(cleanup);

  it('gives each new flow the next backend, and every datagram of a flow the same backend and upstream socket', async () => {
    const [a, b] = [await startUdpBackend('A'), await startUdpBackend('B')];
    const proxy = await udpProxy([a.address, b.address]);
    const first = await client(proxy.port);
    const second = await client(proxy.port);
    assert.equal((await first.ask('1')).text, 'A:1');
    assert.equal((await second.ask('1')).text, 'B:1');
    for (let i = 2; i <= 4; i++) {
      assert.equal((await first.ask(String(i))).text, `A:${i}`);
      assert.equal((await second.ask(String(i))).text, `B:${i}`);
    }
    // One upstream socket per flow: each backend saw one peer port.
    assert.equal(a.peers.size, 1);
    assert.equal(b.peers.size, 1);
    assert.equal(proxy.listener.traffic.udpFlowsOpen, 2);
  });

  it('sends replies from the listener\'s own address and port', async () => {
    const a = await startUdpBackend('A', { answers: 3 });
    const proxy = await udpProxy([a.address]);
    const { socket } = await client(proxy.port);
    const replies = [];
    const three = new Promise((resolve) => socket.on('message', (data, from) => {
      replies.push(from);
      if (replies.length === 3) resolve();
    }));
    socket.send('x', proxy.port, '127.0.0.1');
    await three;
    for (const from of replies) assert.deepEqual([from.address, from.port], ['127.0.0.1', proxy.port]);
  });

  it('relays a 65 507-byte datagram (the largest over IPv4) whole, both ways', async () => {
    const a = await startUdpBackend('A', { echo: true });
    const proxy = await udpProxy([a.address]);
    const sent = Buffer.alloc(65507);
    for (let i = 0; i < sent.length; i++) sent[i] = (i * 7) & 0xff;
    const { data } = await (await client(proxy.port)).ask(sent);
    assert.equal(a.received[0].length, 65507);
    assert.ok(data.equals(sent));
  });

  it('passes over a backend that answers ICMP port unreachable, counting it as a failure, and sends the datagram on', async () => {
    const dead = await refusingPort();
    const a = await startUdpBackend('A');
    const proxy = await udpProxy([`127.0.0.1:${dead}`, a.address]);
    assert.equal((await (await client(proxy.port)).ask('hello')).text, 'A:hello');
    const [refused] = proxy.pool.backends;
    assert.equal(refused.failuresTotal, 1);
    assert.equal(refused.state, 'down');
    assert.match(refused.lastError, /ECONNREFUSED/);
    // Down, it is not picked again: the next flow goes to A at once.
    assert.equal((await (await client(proxy.port)).ask('again')).text, 'A:again');
    assert.equal(refused.failuresTotal, 1);
  });

  it('ends a flow once each of its datagrams had --udp-responses replies; the next datagram starts another', async () => {
    const a = await startUdpBackend('A');
    const proxy = await udpProxy([a.address], { udpResponses: 1 });
    const asker = await client(proxy.port);
    assert.equal((await asker.ask('1')).text, 'A:1');
    await until(() => proxy.listener.traffic.udpFlowsOpen === 0, 'the flow ends');
    assert.equal((await asker.ask('2')).text, 'A:2');
    await until(() => proxy.pool.backends[0].stats.connections === 2, 'two flows are counted');
    // Each flow had its own upstream socket.
    assert.equal(a.peers.size, 2);
    const stats = proxy.pool.backends[0].stats;
    assert.deepEqual([stats.datagramsFromClients, stats.datagramsToClients, stats.bytesFromClients, stats.bytesToClients], [2, 2, 2, 6]);
  });

  it('with --udp-responses 1, two datagrams in flight from one port (a resolver\'s A and AAAA) both get their reply', async () => {
    const a = await startUdpBackend('A');
    const proxy = await udpProxy([a.address], { udpResponses: 1 });
    const asker = await client(proxy.port);
    const replies = [];
    const both = new Promise((resolve) => asker.socket.on('message', (message) => {
      replies.push(String(message));
      if (replies.length === 2) resolve();
    }));
    asker.socket.send('A?', proxy.port, '127.0.0.1');
    asker.socket.send('AAAA?', proxy.port, '127.0.0.1');
    await both;
    assert.deepEqual(replies.sort(), ['A:A?', 'A:AAAA?']);
    await until(() => proxy.listener.traffic.udpFlowsOpen === 0, 'the flow ends once both are answered');
    assert.equal(a.peers.size, 1, 'one flow, one upstream socket');
  });

  it('ends a flow idle for --udp-idle-timeout, closing its upstream socket', async () => {
    const a = await startUdpBackend('A');
    const proxy = await udpProxy([a.address], { udpIdleTimeout: 100 });
    const asker = await client(proxy.port);
    await asker.ask('1');
    assert.equal(proxy.pool.backends[0].active, 1);
    await until(() => proxy.listener.traffic.udpFlowsOpen === 0, 'the idle flow ends');
    assert.equal(proxy.pool.backends[0].active, 0);
    await asker.ask('2');
    assert.equal(a.peers.size, 2);
  });

  it('takes a backend down by its udp check (ICMP unreachable), then drops and counts datagrams, and goes on serving', async () => {
    const dead = await refusingPort();
    const proxy = await udpProxy([`127.0.0.1:${dead}`], { healthCheck: true, healthInterval: 20, healthFall: 1, healthPayload: 'udp:00ff' });
    await until(() => proxy.pool.backends[0].state === 'down', 'the check takes the backend down');
    assert.equal(proxy.pool.backends[0].downByCheck, true);
    const { socket } = await client(proxy.port);
    for (let i = 0; i < 3; i++) socket.send('x', proxy.port, '127.0.0.1');
    await until(() => proxy.listener.traffic.udpDrops === 3, 'the datagrams are counted as dropped');
    assert.equal(proxy.listener.traffic.udpFlowsOpen, 0);
  });

  it('takes a backend down by its udp check when it stays silent past --health-timeout', async () => {
    const silent = await startUdpBackend('A', { answers: 0 });
    const proxy = await udpProxy([silent.address], { healthCheck: true, healthInterval: 20, healthTimeout: 50, healthFall: 1 });
    await until(() => proxy.pool.backends[0].state === 'down', 'the check takes the silent backend down');
    assert.equal(proxy.pool.backends[0].downByCheck, true);
    // The default payload: an empty datagram, which the backend did receive.
    assert.equal(silent.received[0].length, 0);
  });

  it('brings a backend up by its udp check once it answers the payload', async () => {
    const a = await startUdpBackend('A');
    const proxy = await udpProxy([a.address], { healthCheck: true, healthInterval: 20, healthRise: 1, healthPayload: 'udp:00ff' });
    await until(() => a.received.length > 0 && proxy.pool.health.checkOf(proxy.pool.backends[0])?.ok === true, 'a check passes');
    assert.deepEqual([...a.received[0]], [0, 255]);
  });

  it('counts flows against --max-connections: a new client past it is dropped, open flows go on', async () => {
    const a = await startUdpBackend('A');
    const proxy = await udpProxy([a.address], { maxConnections: 1 });
    const first = await client(proxy.port);
    const second = await client(proxy.port);
    await first.ask('1');
    second.socket.send('2', proxy.port, '127.0.0.1');
    await until(() => proxy.listener.traffic.udpDrops === 1, 'the second client\'s datagram is dropped');
    assert.equal((await first.ask('3')).text, 'A:3');
  });

  it('keeps to one backend per client with ip-hash, and counts open flows for least-connections', async () => {
    const [a, b] = [await startUdpBackend('A'), await startUdpBackend('B')];
    const hashed = await startProxy({ mode: 'ip-hash', servers: [a.address, b.address], layer: 'udp', udpResponses: 1 });
    const names = new Set();
    for (let i = 0; i < 4; i++) names.add((await (await client(hashed.port)).ask('x')).text);
    assert.equal(names.size, 1);
    const least = await startProxy({ mode: 'least-connections', servers: [a.address, b.address], layer: 'udp' });
    const one = await (await client(least.port)).ask('x');
    const two = await (await client(least.port)).ask('x');
    assert.notEqual(one.text, two.text);
    assert.deepEqual(least.pool.backends.map((backend) => backend.active), [1, 1]);
  });

  it('gives new flows backends in proportion to their weights with round-robin, and keys hash by the client\'s address', async () => {
    const [a, b] = [await startUdpBackend('A'), await startUdpBackend('B')];
    const weighted = await udpProxy([`${a.address},weight=2`, b.address], { udpResponses: 1 });
    const picks = { A: 0, B: 0 };
    for (let i = 0; i < 6; i++) picks[(await (await client(weighted.port)).ask('x')).text[0]]++;
    assert.deepEqual(picks, { A: 4, B: 2 });
    // Every client is 127.0.0.1: one key, one backend (without a key, hash would go round-robin).
    const hashed = await startProxy({ mode: 'hash', servers: [a.address, b.address], layer: 'udp', udpResponses: 1 });
    const names = new Set();
    for (let i = 0; i < 4; i++) names.add((await (await client(hashed.port)).ask('x')).text);
    assert.equal(names.size, 1);
  });

  it('refuses what needs connections, and udp options on another layer', async () => {
    const { createProxy } = require('../lib');
    assert.throws(() => createProxy({ mode: 'round-robin', servers: ['127.0.0.1:53'], layer: 'udp', sendProxy: 'v1' }), /"--send-proxy" needs connections/);
    assert.throws(() => createProxy({ mode: 'round-robin', servers: ['127.0.0.1:53'], layer: 'tcp', udpResponses: 1 }), /"--udp-responses" needs the udp layer/);
    assert.throws(() => createProxy({ mode: 'round-robin', servers: ['127.0.0.1:53'], layer: 'udp', healthPayload: 'dns:a..b' }), /"healthPayload" must name a host/);
  });
});
