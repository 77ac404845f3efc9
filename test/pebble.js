'use strict';

// Let's Encrypt's test CA for the ACME tests: a real Pebble on loopback ports, and its
// pebble-challtestsrv as the DNS server Pebble validates through, answering 127.0.0.1 for
// every name, so that Pebble's http-01 and tls-alpn-01 validations reach the test's listeners.

const fs = require('node:fs');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const { Resolver } = require('node:dns').promises;
const { execFileSync, spawn } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { Pki } = require('./pki');
const { onCleanup, refusingPort: freePort } = require('./helpers');
const { freeDnsPort } = require('./dns');
const { findTool, needTool } = require('./tools');

const PEBBLE_TOOL = { name: 'pebble', env: 'LILA_PEBBLE', install: 'go install github.com/letsencrypt/pebble/v2/cmd/pebble@v2.10.1' };
const CHALLTESTSRV_TOOL = {
  name: 'pebble-challtestsrv',
  env: 'LILA_PEBBLE_CHALLTESTSRV',
  install: 'go install github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv@v2.10.1'
};
// `go install` puts both in GOBIN, else the first GOPATH's bin; .ci/run exports their paths,
// and then Go is not asked.
const GO_BINS = process.env[PEBBLE_TOOL.env] && process.env[CHALLTESTSRV_TOOL.env] ? [] : goBins();
const PEBBLE = findTool({ ...PEBBLE_TOOL, dirs: GO_BINS });
const CHALLTESTSRV = findTool({ ...CHALLTESTSRV_TOOL, dirs: GO_BINS });
const READY_WITHIN = 10000;
const POLL = 20;
// What is kept of a process's output for error messages.
const KEEP_OUTPUT = 64 * 1024;
// Every child still running: killed when mocha exits, should a cleanup step before theirs have thrown.
const running = new Set();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * In a mocha `before` or `beforeEach`: skips the suite, saying why, when pebble or
 * pebble-challtestsrv was not found, or fails it when `LILA_REQUIRE_PEBBLE=1`.
 *
 * @param {Mocha.Context} context
 */
function needPebble(context) {
  needTool(context, PEBBLE, PEBBLE_TOOL);
  if (CHALLTESTSRV !== null) return;
  // needTool would name LILA_REQUIRE_PEBBLE-CHALLTESTSRV, which no shell can set: one variable for both.
  const missing = `pebble-challtestsrv was not found (${CHALLTESTSRV_TOOL.env}=${process.env[CHALLTESTSRV_TOOL.env] || ''}, PATH); ` +
    `install it with: ${CHALLTESTSRV_TOOL.install}`;
  if (process.env.LILA_REQUIRE_PEBBLE === '1') throw new Error(`LILA_REQUIRE_PEBBLE=1 but ${missing}`);
  console.log(`      skipped: ${missing}`);
  context.skip();
}

/**
 * Starts pebble-challtestsrv (DNS only, 127.0.0.1 for every A query, no AAAA) and Pebble
 * on free 127.0.0.1 ports, with an HTTPS certificate for localhost and 127.0.0.1 from a
 * test Pki; both are killed on cleanup. Pebble keeps its default 5% of refused nonces and
 * 50% of reused authorizations unless `env` says otherwise; its VA does not sleep.
 *
 * @param {object} [options]
 * @param {number} [options.httpPort] where Pebble validates http-01 (default: a port nobody listens on)
 * @param {number} [options.tlsPort] where Pebble validates tls-alpn-01 (default: a port nobody listens on)
 * @param {number} [options.validityPeriod] seconds, of the `default` profile's certificates
 * @param {number} [options.shortlivedValidityPeriod] seconds, of the `shortlived` profile's (6 days):
 *   Pebble picks one of the two at random for an order that names no profile
 * @param {{kid: string, hmacKey: string} | null} [options.eab] requires external account binding with this key
 * @param {Record<string, string>} [options.env] more of Pebble's environment (`PEBBLE_WFE_NONCEREJECT`...)
 * @param {string} [options.dnsServer] `host:port` Pebble resolves and validates dns-01 through instead of
 *   pebble-challtestsrv (a BIND of the test's: test/named.js)
 * @returns {Promise<{directoryUrl: string, ca: string, managementUrl: string, root: () => Promise<string>,
 *   intermediate: () => Promise<string>, stop: () => Promise<void>, start: () => Promise<void>,
 *   env: Record<string, string>, output: () => string}>} `ca` the PEM that Pebble's HTTPS is
 *   signed by; `root()` and `intermediate()` Pebble's current issuing chain (new after each start)
 */
async function startPebble(options = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-pebble-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const pki = new Pki();
  onCleanup(() => pki.remove());
  const certificate = pki.issue({ names: ['localhost'], ips: ['127.0.0.1'] });
  // The ports are found free and let go before the tools bind them: another process may take
  // one in between, and then the tools start again on others.
  for (let attempt = 1; ; attempt++) {
    try {
      return await launch(dir, pki, certificate, options);
    } catch (err) {
      if (attempt === 3 || !/address already in use/.test(err.message)) throw err;
    }
  }
}

module.exports = { PEBBLE, CHALLTESTSRV, needPebble, startPebble };

// startPebble on ports found free now.
async function launch(dir, pki, certificate, options) {
  // Never the ports Pebble validates on: a port the caller let go may come back from bind(0), and
  // Pebble would then validate against its own HTTPS or DNS server.
  const avoid = new Set([options.httpPort, options.tlsPort]);
  let ports;
  do {
    ports = await Promise.all([freePort(), freePort(), freePort(), freeDnsPort()]);
  } while (ports.some((port) => avoid.has(port)));
  const [listenPort, managementPort, challManagementPort, dnsPort] = ports;
  const config = {
    pebble: {
      listenAddress: `127.0.0.1:${listenPort}`,
      managementListenAddress: `127.0.0.1:${managementPort}`,
      certificate: certificate.certFile,
      privateKey: certificate.keyFile,
      httpPort: options.httpPort === undefined ? await freePort() : options.httpPort,
      tlsPort: options.tlsPort === undefined ? await freePort() : options.tlsPort,
      ocspResponderURL: '',
      externalAccountBindingRequired: Boolean(options.eab),
      ...(options.eab ? { externalAccountMACKeys: { [options.eab.kid]: options.eab.hmacKey } } : {}),
      retryAfter: { authz: 1, order: 1 },
      keyAlgorithm: 'ecdsa',
      profiles: {
        default: { description: 'the default profile', validityPeriod: options.validityPeriod || 7776000 },
        shortlived: { description: 'short-lived certificates', validityPeriod: options.shortlivedValidityPeriod || 518400 }
      }
    }
  };
  const configFile = path.join(dir, `pebble-config-${listenPort}.json`);
  fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
  const env = { PEBBLE_VA_NOSLEEP: '1', ...options.env };
  const directoryUrl = `https://127.0.0.1:${listenPort}/dir`;
  const managementUrl = `https://127.0.0.1:${managementPort}`;
  const agent = new https.Agent({ ca: pki.ca });
  onCleanup(() => agent.destroy());

  const challtestsrv = run('pebble-challtestsrv', CHALLTESTSRV, [
    '-dnsserver', `127.0.0.1:${dnsPort}`, '-management', `127.0.0.1:${challManagementPort}`,
    '-http01', '', '-https01', '', '-tlsalpn01', '', '-doh', '',
    '-defaultIPv4', '127.0.0.1', '-defaultIPv6', ''
  ], {});
  await untilReady(challtestsrv, () => resolvesToLoopback(dnsPort));

  let pebble = null;
  async function start() {
    if (pebble !== null && pebble.running()) return;
    pebble = run('pebble', PEBBLE, ['-config', configFile, '-dnsserver', options.dnsServer || `127.0.0.1:${dnsPort}`], env);
    await untilReady(pebble, () => fetchText(agent, directoryUrl));
  }
  try {
    await start();
  } catch (err) {
    await challtestsrv.stop();
    throw err;
  }
  return {
    directoryUrl,
    ca: pki.ca,
    managementUrl,
    env,
    root: () => fetchText(agent, `${managementUrl}/roots/0`),
    intermediate: () => fetchText(agent, `${managementUrl}/intermediates/0`),
    stop: () => pebble.stop(),
    start,
    output: () => `pebble:\n${pebble.output()}\npebble-challtestsrv:\n${challtestsrv.output()}`
  };
}

// A child process, its output kept, killed on cleanup.
function run(name, file, args, env) {
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let output = '';
  const keep = (text) => { output = (output + text).slice(-KEEP_OUTPUT); };
  child.stdout.setEncoding('utf8').on('data', keep);
  child.stderr.setEncoding('utf8').on('data', keep);
  running.add(child);
  child.once('exit', () => running.delete(child));
  // A child that could not be started emits 'error' and 'close', never 'exit'.
  child.once('close', () => running.delete(child));
  const exited = new Promise((resolve) => child.once('close', (code, signal) => resolve(code === null ? signal : code)));
  const handle = {
    name,
    child,
    exited,
    output: () => output,
    running: () => running.has(child),
    async stop() {
      if (handle.running()) child.kill('SIGKILL');
      await exited;
    }
  };
  child.on('error', (err) => keep(`\n${name} could not be started: ${err.message}\n`));
  onCleanup(() => handle.stop());
  return handle;
}

// Polls `probe` until it resolves; fails with the process's output when it exits first or takes too long.
async function untilReady(handle, probe) {
  const deadline = Date.now() + READY_WITHIN;
  let exitCode;
  handle.exited.then((code) => { exitCode = code; });
  for (;;) {
    let lastError;
    try {
      await probe();
      return;
    } catch (err) {
      lastError = err;
    }
    if (exitCode !== undefined) throw new Error(`${handle.name} exited (${exitCode}) before it was ready:\n${handle.output()}`);
    if (Date.now() > deadline) {
      throw new Error(`${handle.name} was not ready within ${READY_WITHIN} ms (${lastError.message}):\n${handle.output()}`);
    }
    await sleep(POLL);
  }
}

// Pebble refuses requests without a User-Agent, as RFC 8555 §6.1 lets a CA.
function fetchText(agent, url) {
  return new Promise((resolve, reject) => {
    const request = https.get(url, { agent, timeout: 2000, headers: { 'user-agent': 'lila-test' } }, (response) => {
      let text = '';
      response.setEncoding('utf8').on('data', (chunk) => { text += chunk; });
      response.on('error', reject);
      response.on('end', () => {
        if (response.statusCode === 200) resolve(text);
        else reject(new Error(`GET ${url}: ${response.statusCode} ${text}`));
      });
    });
    request.on('timeout', () => request.destroy(new Error(`GET ${url}: no answer within 2000 ms`)));
    request.on('error', reject);
  });
}

async function resolvesToLoopback(port) {
  const resolver = new Resolver({ timeout: 500, tries: 1 });
  resolver.setServers([`127.0.0.1:${port}`]);
  const addresses = await resolver.resolve4('ready.lila.test');
  if (addresses[0] !== '127.0.0.1') throw new Error(`ready.lila.test resolves to ${addresses.join(', ')}`);
}

function goBins() {
  const dirs = [path.join(os.homedir(), 'go', 'bin')];
  try {
    const gobin = execFileSync('go', ['env', 'GOBIN'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const gopath = execFileSync('go', ['env', 'GOPATH'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (gobin !== '') dirs.unshift(gobin);
    if (gopath !== '') dirs.push(path.join(gopath.split(path.delimiter)[0], 'bin'));
  } catch {
    // No Go here: the environment variables and PATH still count.
  }
  return dirs;
}
