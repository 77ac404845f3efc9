'use strict';

// The Kubernetes suites, test/kubernetes/*.k8s.js, run by a mocha of their own inside a network
// namespace (test/fixtures/netns.js), where 192.0.2.0/24 is local: the API server refuses
// loopback addresses in EndpointSlices, and there a backend binds one it accepts. They share one
// cluster, started by the first suite and stopped after the last (test/kubernetes/hooks.js).
// Their reporter writes straight to this one's output, so the CI log shows each of their tests.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { once } = require('node:events');
const { cleanup, onCleanup } = require('./helpers');
const { needKubernetes } = require('./kubernetes');

const ROOT = path.join(__dirname, '..');
const SUITES = path.join(__dirname, 'kubernetes');
const NETNS = path.join(__dirname, 'fixtures', 'netns.js');
const MOCHA = path.join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
const WITHIN = 15 * 60 * 1000;

describe('Kubernetes', function () {
  before(function () {
    needKubernetes(this);
    const probe = spawnSync('unshare', ['-n', 'ip', 'link', 'set', 'lo', 'up'], { stdio: 'ignore', timeout: 5000 });
    if (probe.status === 0) return;
    const why = '`unshare -n ip link set lo up` fails here (it needs root, and iproute2)';
    if (process.env.LILA_REQUIRE_KUBERNETES === '1') throw new Error(`LILA_REQUIRE_KUBERNETES=1 but ${why}`);
    console.log(`      skipped: ${why}`);
    this.skip();
  });
  afterEach(cleanup);

  it('passes test/kubernetes/*.k8s.js in a network namespace of their own', async function () {
    this.timeout(WITHIN);
    const files = fs.readdirSync(SUITES).filter((name) => name.endsWith('.k8s.js')).sort().map((name) => path.join('test', 'kubernetes', name));
    assert.notEqual(files.length, 0, `no *.k8s.js in ${SUITES}`);
    const child = spawn('unshare', ['-n', process.execPath, NETNS, '--', process.execPath, MOCHA,
      '--no-package', '--throw-deprecation', '--require', 'test/kubernetes/hooks.js', '--require', 'test/root-hooks.js', '--exit', '--timeout', '60000', ...files], {
      cwd: ROOT,
      env: process.env,
      stdio: 'inherit'
    });
    const exited = once(child, 'exit');
    // A run cut short by the timeout: SIGTERM ends its mocha, and netns.js kills what that left
    // in the namespace (the suites' clusters); SIGKILL, should that not be done in 10 s.
    onCleanup(async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
      await exited.catch(() => {});
      clearTimeout(timer);
    });
    const [code, signal] = await exited;
    assert.equal(signal, null, `the Kubernetes suites were killed by ${signal}`);
    assert.equal(code, 0, `the Kubernetes suites failed (mocha exited with ${code}): their report is above`);
  });
});
