'use strict';

// DNS peers for the discovery tests: a real dnsmasq on a loopback port with
// its records in files the test rewrites, and a small DNS server written
// here for what dnsmasq cannot be made to do (SERVFAIL, silence, truncation).

const dgram = require('node:dgram');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const { onCleanup } = require('./helpers');

const DNSMASQ = ['/usr/sbin/dnsmasq', '/usr/bin/dnsmasq'].find((file) => fs.existsSync(file)) || null;
const TYPES = { A: 1, AAAA: 28, SRV: 33 };
const TYPE_NAMES = Object.fromEntries(Object.entries(TYPES).map(([name, type]) => [type, name]));
const RCODES = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3, REFUSED: 5 };

/**
 * Starts dnsmasq in the foreground on 127.0.0.1 at a free port, answering
 * for `*.test` only: A records from a hosts file (`setHosts` rewrites it and
 * sends SIGHUP, which makes dnsmasq re-read it and clear its cache) and SRV
 * records from its configuration (`restart` starts it again on the same port
 * with new ones: SIGHUP does not re-read them). Every answer has a TTL of
 * `ttl` seconds.
 *
 * @param {{hosts?: string, srv?: string[], ttl?: number}} [records] hosts-file text, and
 *   `srv-host=` values: `_http._tcp.svc.test,a.test,8080,10,1` (name, target, port, priority, weight)
 * @returns {Promise<{address: string, port: number, setHosts: (text: string) => Promise<void>,
 *   restart: (srv: string[]) => Promise<void>, stop: () => Promise<void>}>}
 */
async function startDnsmasq(records = {}) {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'lila-dnsmasq-'));
  // dnsmasq started as root reads its files as nobody.
  await fs.promises.chmod(dir, 0o755);
  onCleanup(() => fs.promises.rm(dir, { recursive: true, force: true }));
  const hostsFile = path.join(dir, 'hosts');
  const confFile = path.join(dir, 'dnsmasq.conf');
  const port = await freeDnsPort();
  const ttl = records.ttl === undefined ? 1 : records.ttl;
  let child = null;
  let output = '';

  async function start(srv) {
    await fs.promises.writeFile(confFile, srv.map((line) => `srv-host=${line}\n`).join(''), { mode: 0o644 });
    output = '';
    child = spawn(DNSMASQ, [
      '--keep-in-foreground', `--conf-file=${confFile}`, `--port=${port}`, '--listen-address=127.0.0.1',
      '--bind-interfaces', '--no-resolv', '--no-hosts', `--addn-hosts=${hostsFile}`, '--local=/test/',
      `--local-ttl=${ttl}`, '--pid-file=', '--log-facility=-', '--log-queries'
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk) => { output += chunk; });
    child.stderr.on('data', (chunk) => { output += chunk; });
    const exited = once(child, 'exit').then(([code, signal]) => {
      throw new Error(`dnsmasq exited (${code ?? signal}) before answering:\n${output}`);
    });
    await Promise.race([answering(port), exited]);
    exited.catch(() => {});
  }

  async function stop() {
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
    child = null;
  }

  await fs.promises.writeFile(hostsFile, records.hosts || '', { mode: 0o644 });
  await start(records.srv || []);
  onCleanup(stop);
  return {
    address: `127.0.0.1:${port}`,
    port,
    async setHosts(text) {
      await fs.promises.writeFile(hostsFile, text, { mode: 0o644 });
      child.kill('SIGHUP');
      // The reload is done once dnsmasq answers with the file's records: it logs "read <file>".
      const deadline = Date.now() + 5000;
      const from = output.length;
      while (!output.slice(from).includes(`read ${hostsFile}`)) {
        if (Date.now() > deadline) throw new Error(`dnsmasq did not re-read ${hostsFile}:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    async restart(srv) {
      await stop();
      await start(srv);
    },
    stop
  };
}

/**
 * A DNS server on 127.0.0.1 (UDP and TCP on one port) answering from
 * `zone`, which the test may change at any time:
 * `zone['api.test'] = {A: [{address, ttl}], AAAA: [...], SRV: [{priority, weight, port, target, ttl}]}`.
 * A name not in the zone is NXDOMAIN; a type it lacks, an empty answer.
 * `behaviour` makes it misbehave: `servfail`, `refused`, `silent` (no answer
 * at all), or `truncate` (UDP answers are empty and truncated, TCP answers whole);
 * `refused` (a set of types, `AAAA`) refuses queries of those types alone.
 *
 * @returns {Promise<{address: string, zone: object, behaviour: string, refused: Set<string>, queries: {name: string, type: number, tcp: boolean}[]}>}
 */
async function startDnsServer() {
  const server = { address: '', zone: {}, behaviour: 'answer', refused: new Set(), queries: [] };
  const { udp, tcp, port } = await bindBoth();
  server.address = `127.0.0.1:${port}`;
  const sockets = new Set();
  onCleanup(() => {
    for (const socket of sockets) socket.destroy();
    udp.close();
    return new Promise((resolve) => tcp.close(resolve));
  });
  udp.on('message', (message, remote) => {
    const reply = answer(server, message, false);
    if (reply !== null) udp.send(reply, remote.port, remote.address);
  });
  tcp.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
        const message = buffered.subarray(2, 2 + buffered.readUInt16BE(0));
        buffered = buffered.subarray(2 + message.length);
        const reply = answer(server, message, true);
        if (reply === null) continue;
        const length = Buffer.alloc(2);
        length.writeUInt16BE(reply.length);
        socket.write(Buffer.concat([length, reply]));
      }
    });
  });
  return server;
}

/**
 * Resolves once the proxy's members are exactly `names` (as the balancer's
 * 'changed' events say); rejects after `ms`.
 */
function membersBecome(proxy, names, ms = 8000) {
  const wanted = [...names].sort().join(' ');
  const now = () => proxy.backends.map((backend) => backend.name).sort().join(' ');
  if (now() === wanted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proxy.balancer.removeListener('changed', check);
      reject(new Error(`members are "${now()}", not "${wanted}", after ${ms} ms`));
    }, ms);
    const check = () => {
      if (now() !== wanted) return;
      clearTimeout(timer);
      proxy.balancer.removeListener('changed', check);
      resolve();
    };
    proxy.balancer.on('changed', check);
  });
}

/**
 * A port free for both UDP and TCP on 127.0.0.1, for a DNS server to take.
 *
 * @returns {Promise<number>}
 */
async function freeDnsPort() {
  const { udp, tcp, port } = await bindBoth();
  udp.close();
  await new Promise((resolve) => tcp.close(resolve));
  return port;
}

module.exports = { DNSMASQ, startDnsmasq, startDnsServer, membersBecome, freeDnsPort };

// The reply to one query, or null for none.
function answer(server, message, tcp) {
  if (message.length < 12) return null;
  const id = message.readUInt16BE(0);
  const flags = message.readUInt16BE(2);
  const { name, end } = readName(message, 12);
  const type = message.readUInt16BE(end);
  const question = message.subarray(12, end + 4);
  server.queries.push({ name, type, tcp });
  const behaviour = server.behaviour;
  if (behaviour === 'silent') return null;
  const records = server.zone[name];
  let rcode = records === undefined ? RCODES.NXDOMAIN : RCODES.NOERROR;
  if (behaviour === 'servfail') rcode = RCODES.SERVFAIL;
  if (behaviour === 'refused' || server.refused.has(TYPE_NAMES[type])) rcode = RCODES.REFUSED;
  const truncated = behaviour === 'truncate' && !tcp;
  const answers = rcode !== RCODES.NOERROR || truncated ? [] : answersFor(records, type);
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  // QR, AA, the RD asked for, RA; TC when truncated.
  header.writeUInt16BE(0x8000 | 0x0400 | (flags & 0x0100) | 0x0080 | (truncated ? 0x0200 : 0) | rcode, 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(answers.length, 6);
  return Buffer.concat([header, question, ...answers]);
}

function answersFor(records, type) {
  const out = [];
  if (type === TYPES.A) for (const { address, ttl } of records.A || []) out.push(record(type, ttl, Buffer.from(address.split('.').map(Number))));
  if (type === TYPES.AAAA) for (const { address, ttl } of records.AAAA || []) out.push(record(type, ttl, ipv6Bytes(address)));
  if (type === TYPES.SRV) {
    for (const { priority, weight, port, target, ttl } of records.SRV || []) {
      const fixed = Buffer.alloc(6);
      fixed.writeUInt16BE(priority, 0);
      fixed.writeUInt16BE(weight, 2);
      fixed.writeUInt16BE(port, 4);
      out.push(record(type, ttl, Buffer.concat([fixed, encodeName(target)])));
    }
  }
  return out;
}

// One answer record, its name a pointer to the question's.
function record(type, ttl, data) {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(0xc00c, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt16BE(1, 4);
  head.writeUInt32BE(ttl === undefined ? 1 : ttl, 6);
  head.writeUInt16BE(data.length, 10);
  return Buffer.concat([head, data]);
}

function readName(message, offset) {
  const labels = [];
  let at = offset;
  while (message[at] !== 0) {
    labels.push(message.toString('latin1', at + 1, at + 1 + message[at]));
    at += 1 + message[at];
  }
  return { name: labels.join('.').toLowerCase(), end: at + 1 };
}

function encodeName(name) {
  const parts = name.split('.').filter((label) => label !== '');
  return Buffer.concat([...parts.map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label, 'latin1')])), Buffer.from([0])]);
}

function ipv6Bytes(address) {
  const [head, tail = ''] = address.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  const bytes = Buffer.alloc(16);
  groups.forEach((group, i) => bytes.writeUInt16BE(parseInt(group, 16), i * 2));
  return bytes;
}

// A UDP socket and a TCP listener on the same free port.
async function bindBoth() {
  for (let attempt = 0; ; attempt++) {
    const udp = dgram.createSocket('udp4');
    udp.bind(0, '127.0.0.1');
    await once(udp, 'listening');
    const { port } = udp.address();
    const tcp = net.createServer();
    try {
      tcp.listen(port, '127.0.0.1');
      await once(tcp, 'listening');
      return { udp, tcp, port };
    } catch (err) {
      udp.close();
      if (attempt === 10) throw err;
    }
  }
}

// dnsmasq gives no readiness event: ask until it answers.
async function answering(port) {
  const dns = require('node:dns');
  const resolver = new dns.promises.Resolver({ timeout: 200, tries: 1 });
  resolver.setServers([`127.0.0.1:${port}`]);
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      await resolver.resolve4('ready.invalid-probe.test');
      return;
    } catch (err) {
      if (err.code === 'ENOTFOUND' || err.code === 'ENODATA') return;
      if (Date.now() > deadline) throw new Error(`dnsmasq did not answer on port ${port} within 5 s: ${err.code}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}
