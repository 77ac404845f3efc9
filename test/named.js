'use strict';

// A real BIND 9 for the DNS-01 tests: `named -g` unprivileged on a free 127.0.0.1 port,
// authoritative for one test zone (`example.test`), taking dynamic updates signed with one
// TSIG key. Records are read back with dig, written with nsupdate (Debian's bind9-dnsutils).

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFile } = require('node:child_process');
const { once } = require('node:events');
const { promisify } = require('node:util');
const { onCleanup } = require('./helpers');
const { freeDnsPort } = require('./dns');
const { findTool, needTool } = require('./tools');

const NAMED_TOOL = { name: 'named', env: 'LILA_NAMED', install: 'apt-get install bind9 bind9-dnsutils' };
const NAMED = findTool({ ...NAMED_TOOL, dirs: ['/usr/sbin'] });
const DIG = findTool({ name: 'dig', env: 'LILA_DIG' });
const NSUPDATE = findTool({ name: 'nsupdate', env: 'LILA_NSUPDATE' });
const ZONE = 'example.test';
const KEY_NAME = 'lila-test';
const READY_WITHIN = 10000;
const run = promisify(execFile);

/**
 * In a mocha `before`: skips the suite when named, dig or nsupdate is missing, or fails it
 * when `LILA_REQUIRE_NAMED=1`.
 *
 * @param {Mocha.Context} context
 */
function needNamed(context) {
  needTool(context, NAMED !== null && DIG !== null && NSUPDATE !== null ? NAMED : null, NAMED_TOOL);
}

/**
 * Starts named for `example.test` (SOA, NS ns.example.test at 127.0.0.1) on a free port;
 * updates are allowed for the key `lila-test` (hmac-sha256 by default); stopped on cleanup.
 *
 * @param {{algorithm?: string}} [options]
 * @returns {Promise<{port: number, zone: string, key: {name: string, algorithm: string, secret: string},
 *   tsig: string, txt: (name: string) => Promise<string[]>, output: () => string, stop: () => Promise<void>}>}
 *   `tsig`: NAME:ALGORITHM:SECRET
 */
async function startNamed(options = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-named-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const algorithm = options.algorithm || 'hmac-sha256';
  const secret = crypto.randomBytes(32).toString('base64');
  const port = await freeDnsPort();
  fs.writeFileSync(path.join(dir, `${ZONE}.zone`), [
    '$TTL 1',
    `@ IN SOA ns.${ZONE}. hostmaster.${ZONE}. 1 3600 600 86400 1`,
    `@ IN NS ns.${ZONE}.`,
    'ns IN A 127.0.0.1',
    '@ IN A 127.0.0.1',
    '* IN A 127.0.0.1',
    ''
  ].join('\n'));
  const conf = path.join(dir, 'named.conf');
  fs.writeFileSync(conf, `
key "${KEY_NAME}" { algorithm ${algorithm}; secret "${secret}"; };
options {
  directory "${dir}";
  pid-file "${dir}/named.pid";
  listen-on port ${port} { 127.0.0.1; };
  listen-on-v6 { none; };
  recursion no;
  dnssec-validation no;
  notify no;
};
controls { };
zone "${ZONE}" { type primary; file "${ZONE}.zone"; allow-update { key "${KEY_NAME}"; }; };
`);
  let output = '';
  const child = spawn(NAMED, ['-g', '-c', conf, '-n', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.setEncoding('utf8').on('data', (text) => { output += text; });
  child.stderr.setEncoding('utf8').on('data', (text) => { output += text; });
  const exited = once(child, 'exit');
  async function stop() {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await exited;
  }
  onCleanup(stop);
  const started = Date.now();
  while (!/ running\n/.test(output)) {
    if (child.exitCode !== null) throw new Error(`named exited (${child.exitCode}):\n${output}`);
    if (Date.now() - started > READY_WITHIN) throw new Error(`named did not start within ${READY_WITHIN} ms:\n${output}`);
    await Promise.race([once(child.stderr, 'data'), exited]);
  }
  const key = { name: KEY_NAME, algorithm, secret };
  return {
    port,
    zone: ZONE,
    key,
    tsig: `${KEY_NAME}:${algorithm}:${secret}`,
    output: () => output,
    stop,
    async txt(name) {
      const { stdout } = await run(DIG, ['+short', '+norecurse', '+tcp', '-p', String(port), '@127.0.0.1', name, 'TXT']);
      return stdout.split('\n').filter((line) => line !== '').map((line) => line.replace(/^"|"$/g, ''));
    }
  };
}

module.exports = { NAMED, DIG, NSUPDATE, ZONE, needNamed, startNamed };
