'use strict';

// lila's own h2 server side (lib/h2) against core http2's, each answering every request with a small
// body, under h2load (`-c10 -m100 -D5`, after a 1 s warm-up), over h2c and TLS: the server's CPU time
// per request (process.cpuUsage() in the server's process, from right before to right after the run).
//
//   node bench/h2-codec.js [--duration 5] [--rounds 1]
//
// Each server runs in a child process of its own (this file, with --serve), so that h2load and this
// process cost it nothing. Needs h2load (Debian: nghttp2-client) and openssl.

const fs = require('node:fs');
const http2 = require('node:http2');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const tls = require('node:tls');
const { fork, spawn } = require('node:child_process');
const { once } = require('node:events');
const { parseArgs } = require('node:util');
const { makeCertificates } = require('./certificates');

const H2LOAD = process.env.LILA_H2LOAD || '/usr/bin/h2load';
const BODY = Buffer.from('hello from the h2 bench\n');
const FINISHED = /^finished in [\d.]+m?s, ([\d.]+) req\/s/m;
const REQUESTS = /^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed/m;
const SERVERS = ['lib/h2', 'node http2'];

if (process.argv[2] === '--serve') serve(process.argv[3], process.argv[4], process.argv[5], process.argv[6]);
else main().catch((err) => {
  console.error(`h2-codec bench: ${err.stack || err.message}`);
  process.exitCode = 1;
});

async function main() {
  const { values } = parseArgs({ options: { duration: { type: 'string', default: '5' }, rounds: { type: 'string', default: '1' } } });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-h2-codec-bench-'));
  try {
    const [certificate] = makeCertificates(dir, ['ECDSA']);
    const rows = [];
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const transport of ['h2c', 'TLS']) {
        for (const server of SERVERS) {
          rows.push({ server, transport, ...(await measure(server, transport, certificate, Number(values.duration))) });
        }
      }
    }
    printTable(rows);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// One server in a child process, h2load against it twice (a warm-up, then the measured run).
async function measure(server, transport, certificate, duration) {
  const child = fork(__filename, ['--serve', server, transport, certificate.certFile, certificate.keyFile], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    const [{ port }] = await once(child, 'message');
    const url = `${transport === 'TLS' ? 'https' : 'http'}://127.0.0.1:${port}/`;
    await h2load(['-c10', '-m100', '-D1', url]);
    const before = await ask(child);
    const output = await h2load(['-c10', '-m100', `-D${duration}`, url]);
    const after = await ask(child);
    const [, , done, succeeded, failed] = REQUESTS.exec(output).slice(1).map(Number);
    const cpuMs = (after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system) / 1000;
    const answered = after.requests - before.requests;
    return { rps: Number(FINISHED.exec(output)[1]), done, succeeded, failed, answered, cpuMs, usPerRequest: (cpuMs * 1000) / answered };
  } finally {
    child.kill();
  }
}

function ask(child) {
  child.send('stats');
  return once(child, 'message').then(([message]) => message);
}

function h2load(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(H2LOAD, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (text) => { output += text; });
    child.stderr.setEncoding('utf8').on('data', (text) => { output += text; });
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0 || !FINISHED.test(output) || !/Application protocol: h2/.test(output)) reject(new Error(`h2load ${args.join(' ')} failed:\n${output}`));
      else resolve(output);
    });
  });
}

function printTable(rows) {
  const lines = [
    '| server | transport | req/s | requests | failed | server CPU ms | CPU µs / request |',
    '| ------ | --------- | ----: | -------: | -----: | -----------: | ---------------: |'
  ];
  for (const row of rows) {
    lines.push(`| ${row.server} | ${row.transport} | ${Math.round(row.rps)} | ${row.answered} | ${row.failed} | ${Math.round(row.cpuMs)} | ${row.usPerRequest.toFixed(2)} |`);
  }
  for (const transport of ['h2c', 'TLS']) {
    const ours = rows.filter((row) => row.server === 'lib/h2' && row.transport === transport);
    const node = rows.filter((row) => row.server === 'node http2' && row.transport === transport);
    if (ours.length > 0 && node.length > 0) {
      lines.push(`\n${transport}: lib/h2 uses ${(mean(ours) / mean(node)).toFixed(2)} of node http2's CPU per request`);
    }
  }
  console.log(`Node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0].model}), h2load -c10 -m100\n`);
  console.log(lines.join('\n'));
}

function mean(rows) {
  return rows.reduce((sum, row) => sum + row.usPerRequest, 0) / rows.length;
}

// The child: a server answering every request with BODY, its request count and CPU time on demand.
function serve(server, transport, certFile, keyFile) {
  let requests = 0;
  const answer = (stream) => {
    requests++;
    stream.respond({ ':status': 200, 'content-type': 'text/plain', 'content-length': BODY.length });
    stream.end(BODY);
  };
  let listener;
  const secure = transport === 'TLS' ? { cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile), ALPNProtocols: ['h2'] } : null;
  if (server === 'node http2') {
    listener = secure ? http2.createSecureServer(secure) : http2.createServer();
    listener.on('stream', answer);
  } else {
    const { createServerSession } = require('../lib/h2/connection');
    const onSocket = (socket) => {
      const session = createServerSession(socket, { maxConcurrentStreams: 100 });
      session.on('error', () => {});
      session.on('stream', answer);
    };
    listener = secure ? tls.createServer(secure, onSocket) : net.createServer(onSocket);
  }
  listener.listen(0, '127.0.0.1', () => process.send({ port: listener.address().port }));
  process.on('message', () => process.send({ requests, cpu: process.cpuUsage() }));
  process.on('disconnect', () => process.exit(0));
}
