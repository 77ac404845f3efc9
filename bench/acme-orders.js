'use strict';

// How long lila takes to serve N names it obtains from an ACME CA (Let's Encrypt's Pebble, as
// the tests run it), by --acme-max-concurrency. Needs pebble and pebble-challtestsrv
// (LILA_PEBBLE, LILA_PEBBLE_CHALLTESTSRV, or on PATH / in $(go env GOPATH)/bin).
//
//   node bench/acme-orders.js [--names 20] [--concurrency 1,2,8] [--rounds 3]

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const tls = require('node:tls');
const { parseArgs } = require('node:util');
const { spawn } = require('node:child_process');
const { startPebble } = require('../test/pebble');
const { refusingPort, cleanup } = require('../test/helpers');

const LILA = path.join(__dirname, '..', 'lila');

async function main() {
  const { values } = parseArgs({
    options: { names: { type: 'string', default: '20' }, concurrency: { type: 'string', default: '1,2,8' }, rounds: { type: 'string', default: '3' } }
  });
  const count = Number(values.names);
  const rounds = Number(values.rounds);
  console.log(`${count} names over http-01 from Pebble 2.10.1 (PEBBLE_VA_NOSLEEP=1), Node ${process.version}; medians of ${rounds} rounds`);
  console.log('| --acme-max-concurrency | all served after (ms) | per name (ms) |');
  console.log('| ---: | ---: | ---: |');
  for (const concurrency of values.concurrency.split(',').map(Number)) {
    const times = [];
    for (let round = 0; round < rounds; round++) times.push(await serveAll(count, concurrency));
    const median = times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
    console.log(`| ${concurrency} | ${median} | ${(median / count).toFixed(1)} |`);
  }
  process.exit(0);
}

// Starts a Pebble and a lila routing `count` names; the ms from lila's start until every name's
// obtained certificate is served.
async function serveAll(count, concurrency) {
  const httpPort = await refusingPort();
  const tlsPort = await refusingPort();
  const pebble = await startPebble({ httpPort, tlsPort });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-acme-bench-'));
  const names = Array.from({ length: count }, (_, i) => `n${i}.bench.test`);
  fs.writeFileSync(path.join(dir, 'ca.pem'), pebble.ca);
  fs.writeFileSync(path.join(dir, 'lila.conf'), 'pool web round-robin 127.0.0.1:9\n' +
    `listen 127.0.0.1:${httpPort}\n  route * web\nlisten 127.0.0.1:${tlsPort} --tls\n${names.map((name) => `  route ${name} web\n`).join('')}`);
  const started = Date.now();
  const lila = spawn(process.execPath, [LILA, '--acme', 'bench@example.com', '--acme-directory', pebble.directoryUrl,
    '--acme-ca', path.join(dir, 'ca.pem'), '--state-dir', path.join(dir, 'state'), '--config', path.join(dir, 'lila.conf'),
    '--acme-challenges', 'http-01', '--acme-http-port', `127.0.0.1:${httpPort}`, '--acme-max-concurrency', String(concurrency)],
  { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  lila.stderr.setEncoding('utf8').on('data', (text) => { log += text; });
  try {
    await new Promise((resolve, reject) => {
      const check = () => {
        if ((log.match(/acme: obtained the certificate of /g) || []).length >= count) resolve();
      };
      lila.stderr.on('data', check);
      lila.once('exit', () => reject(new Error(`lila exited:\n${log}`)));
    });
    for (const name of names) await handshake(tlsPort, name);
    return Date.now() - started;
  } finally {
    lila.kill('SIGKILL');
    // Pebble, its DNS and their files, as the tests' cleanup stops them.
    await cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function handshake(port, servername) {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      socket.end();
      resolve();
    });
    socket.once('error', reject);
  });
}

main().catch((err) => {
  console.error(err.stack);
  process.exit(1);
});
