'use strict';

const assert = require('node:assert/strict');
const dgram = require('node:dgram');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const { cleanup, onCleanup, spawnLila, startLila, freePorts, nextLine, startTcpBackend } = require('./helpers');
const { hasReusePort } = require('../lib/cluster/distribution');

const FLOWS = 2000;
const BURST = 100;

// A udp backend on 127.0.0.1:0 answering each datagram with its name and the datagram.
async function startUdpBackend(name) {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (data, from) => socket.send(Buffer.concat([Buffer.from(`${name}:`), data]), from.port, from.address));
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  onCleanup(() => socket.close());
  return `127.0.0.1:${socket.address().port}`;
}

async function udpClient() {
  const socket = dgram.createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  onCleanup(() => socket.close());
  return socket;
}

async function ask(port, text) {
  const socket = await udpClient();
  const reply = once(socket, 'message');
  socket.send(text, port, '127.0.0.1');
  return String((await reply)[0]);
}

function openDescriptors(pid) {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

async function getJson(port, pathname) {
  const response = await fetch(`http://127.0.0.1:${port}${pathname}`);
  return pathname === '/metrics' ? response.text() : response.json();
}

describe('udp layer, as the executable runs it', () => {
  afterEach(cleanup);

  it('--workers: every datagram answered; where Node has reusePort, each flow stays on one worker (one upstream socket)', async function () {
    this.timeout(30000);
    // The backend answers with the port lila's upstream socket sent from: one flow, one port.
    const backend = dgram.createSocket('udp4');
    backend.on('message', (data, from) => backend.send(String(from.port), from.port, from.address));
    backend.bind(0, '127.0.0.1');
    await once(backend, 'listening');
    onCleanup(() => backend.close());
    const [port] = await freePorts(1);
    // The startup line comes once every worker listens.
    await startLila(['round-robin', '--layer', 'udp', `127.0.0.1:${backend.address().port}`, '-a', '127.0.0.1', '-p', String(port),
      '--workers', '2']);
    const upstreams = [];
    for (let c = 0; c < 16; c++) {
      const socket = await udpClient();
      const seen = new Set();
      for (let i = 0; i < 4; i++) {
        const reply = once(socket, 'message');
        socket.send(`${c}.${i}`, port, '127.0.0.1');
        seen.add(String((await reply)[0]));
      }
      upstreams.push(seen.size);
    }
    if (hasReusePort(process.versions.node, process.platform)) {
      assert.deepEqual(upstreams, Array(16).fill(1), 'each client\'s datagrams went through one flow');
    } else {
      // Node 20: the workers share one socket; a client's datagrams may start a flow in each (README, UDP).
      assert.ok(upstreams.every((count) => count >= 1 && count <= 2), JSON.stringify(upstreams));
    }
  });

  it('gives every upstream socket back once a burst of 2 000 flows has been idle for --udp-idle-timeout', async function () {
    this.timeout(30000);
    const backend = await startUdpBackend('A');
    const [port] = await freePorts(1);
    const lila = await startLila(['round-robin', '--layer', 'udp', backend, '-a', '127.0.0.1', '-p', String(port), '--udp-idle-timeout', '5s']);
    const pid = lila.child.pid;
    // One datagram answered first: lila's own descriptors (the loop's, the socket's) are all open.
    assert.equal(await ask(port, 'warm'), 'A:warm');
    const before = openDescriptors(pid);
    const clients = [];
    onCleanup(() => clients.forEach((socket) => socket.close()));
    // In bursts of 100, each answered before the next: a burst of 2 000 datagrams at once would
    // overflow the socket's receive buffer, and UDP drops what does not fit.
    for (let first = 0; first < FLOWS; first += BURST) {
      const burst = [];
      for (let i = first; i < first + BURST; i++) {
        const socket = dgram.createSocket('udp4');
        clients.push(socket);
        socket.bind(0, '127.0.0.1');
        burst.push(once(socket, 'listening').then(() => {
          const answered = once(socket, 'message');
          socket.send(String(i), port, '127.0.0.1');
          return answered;
        }));
      }
      await Promise.all(burst);
    }
    assert.ok(openDescriptors(pid) >= before + FLOWS, `${openDescriptors(pid)} descriptors open with ${FLOWS} flows, ${before} before`);
    // Nothing lila writes tells when: /proc is read until the count is back (or 15 s have passed).
    const deadline = Date.now() + 15000;
    while (openDescriptors(pid) > before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(openDescriptors(pid) <= before, `${openDescriptors(pid)} descriptors open after the idle timeout, ${before} before`);
  });

  it('listens for udp and tcp on one port number from a config file', async () => {
    const [port] = await freePorts(1);
    const udp = await startUdpBackend('U');
    const tcp = await startTcpBackend('T', (socket) => socket.end('T'));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'udp-config-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'lila.conf');
    fs.writeFileSync(file, [
      `pool dns-udp round-robin --layer udp ${udp}`,
      `pool dns-tcp round-robin --layer tcp 127.0.0.1:${tcp.port}`,
      `listen 127.0.0.1:${port} --layer udp --udp-responses 1`,
      '  route * dns-udp',
      `listen 127.0.0.1:${port} --layer tcp`,
      '  route * dns-tcp',
      ''
    ].join('\n'));
    const lila = spawnLila(['-c', file]);
    await nextLine(lila, /lila: tcp listening on .*/, 5000);
    assert.equal(await ask(port, 'q'), 'U:q');
    const socket = net.connect(port, '127.0.0.1');
    onCleanup(() => socket.destroy());
    const [data] = await once(socket, 'data');
    assert.equal(String(data), 'T');
  });

  it('replies from the address each client asked, with a listener per address (README, UDP)', async () => {
    const [port] = await freePorts(1);
    const backend = await startUdpBackend('A');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'udp-config-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'lila.conf');
    const listeners = ['127.0.0.1', '127.0.0.2'].map((address) => `listen ${address}:${port} --layer udp\n  route * p\n`);
    fs.writeFileSync(file, `pool p round-robin --layer udp ${backend}\n${listeners.join('')}`);
    const lila = spawnLila(['-c', file]);
    await nextLine(lila, new RegExp(`lila: udp listening on 127\\.0\\.0\\.2:${port}.*`), 5000);
    for (const address of ['127.0.0.2', '127.0.0.1']) {
      const socket = await udpClient();
      const reply = once(socket, 'message');
      socket.send('q', port, address);
      const [data, from] = await reply;
      assert.deepEqual([String(data), from.address, from.port], ['A:q', address, port]);
    }
  });

  it('keeps a flow on its backend and upstream socket across a reload that keeps the backend', async () => {
    const [port] = await freePorts(1);
    const received = [];
    const a = dgram.createSocket('udp4');
    a.on('message', (data, from) => {
      received.push(from.port);
      a.send(`A:${data}`, from.port, from.address);
    });
    a.bind(0, '127.0.0.1');
    await once(a, 'listening');
    onCleanup(() => a.close());
    const b = await startUdpBackend('B');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'udp-config-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'lila.conf');
    const write = (servers, idle) => fs.writeFileSync(file, `pool p least-connections --layer udp ${servers}\nlisten 127.0.0.1:${port} --layer udp --udp-idle-timeout ${idle}\n  route * p\n`);
    write(`127.0.0.1:${a.address().port}`, '30s');
    const lila = spawnLila(['-c', file]);
    await nextLine(lila, /lila: udp listening on .*/, 5000);
    const socket = await udpClient();
    const exchange = async (text) => {
      const reply = once(socket, 'message');
      socket.send(text, port, '127.0.0.1');
      return String((await reply)[0]);
    };
    assert.equal(await exchange('1'), 'A:1');
    write(`127.0.0.1:${a.address().port} ${b}`, '20s');
    const reloaded = nextLine(lila, /lila: SIGHUP: reloaded .*/, 5000);
    lila.child.kill('SIGHUP');
    await reloaded;
    // least-connections would give a new flow to B, which has none: the flow stays on A.
    assert.equal(await exchange('2'), 'A:2');
    assert.equal(new Set(received).size, 1);
    assert.equal(await ask(port, 'new'), 'B:new');
    // A listener made anew on the address (a setting that cannot change in place) takes the socket and its flows over.
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('--udp-idle-timeout 20s', '--udp-idle-timeout 20s --no-http2'));
    const replaced = nextLine(lila, /lila: SIGHUP: reloaded .*/, 5000);
    lila.child.kill('SIGHUP');
    assert.match((await replaced).line, /listeners 1 \(\+1 -1\)/);
    assert.equal(await exchange('3'), 'A:3');
    assert.equal(new Set(received).size, 1);
  });

  it('refuses two udp listeners on one port in a config file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'udp-config-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'lila.conf');
    fs.writeFileSync(file, 'pool p round-robin --layer udp 127.0.0.1:53\nlisten 5300 --layer udp\n  route * p\nlisten 5300 --layer udp\n  route * p\n');
    const lila = spawnLila(['--check', '-c', file]);
    const { code } = await lila.closed;
    assert.equal(code, 2);
    assert.match(lila.stderr, /listen 5300: that port is already listened on, line 2/);
  });

  it('counts datagrams, bytes, flows and drops in /status and /metrics, and writes an access line per flow', async () => {
    const backend = await startUdpBackend('A');
    const [port, admin] = await freePorts(2);
    const lila = await startLila(['round-robin', '--layer', 'udp', backend, '-a', '127.0.0.1', '-p', String(port),
      '--max-connections', '1', '--udp-idle-timeout', '300ms', '--admin', `127.0.0.1:${admin}`, '--access-log']);
    const line = nextLine(lila, /lila: access .*/);
    assert.equal(await ask(port, 'hello'), 'A:hello');
    // The open flow holds the one place --max-connections gives: another client's datagram is dropped.
    const other = await udpClient();
    other.send('y', port, '127.0.0.1');
    assert.match((await line).line, /client=127\.0\.0\.1 client_port=\d+ backend=127\.0\.0\.1:\d+ duration_ms=[\d.]+ datagrams_from_client=1 datagrams_to_client=1 bytes_from_client=5 bytes_to_client=7/);
    const status = await getJson(admin, '/status');
    assert.deepEqual(status.udp, { flows_open: 0, datagrams_dropped: 1 });
    const [described] = status.backends;
    assert.deepEqual([described.connections, described.datagrams_from_clients, described.datagrams_to_clients, described.bytes_from_clients, described.bytes_to_clients],
      [1, 1, 1, 5, 7]);
    const metrics = await getJson(admin, '/metrics');
    assert.match(metrics, new RegExp(`^lila_backend_datagrams_total\\{backend="${backend}",direction="from_client"\\} 1$`, 'm'));
    assert.match(metrics, new RegExp(`^lila_backend_bytes_total\\{backend="${backend}",direction="to_client"\\} 7$`, 'm'));
    assert.match(metrics, new RegExp(`^lila_backend_flows_total\\{backend="${backend}"\\} 1$`, 'm'));
    assert.match(metrics, /^lila_udp_datagrams_dropped_total 1$/m);
    assert.match(metrics, /^lila_udp_flows_open 0$/m);
  });
});

