'use strict';

// `lila --kubernetes` on the command line: what it is made with, and the mistakes it refuses
// with one line (exit 2) before anything connects.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseCommandLine } = require('../lib/cli');
const { runLila } = require('./helpers');

describe('lila --kubernetes on the command line', function () {
  let dir;
  let kubeconfig;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-kube-cli-'));
    kubeconfig = path.join(dir, 'config');
    fs.writeFileSync(kubeconfig, [
      'apiVersion: v1',
      'kind: Config',
      'current-context: test',
      'contexts:',
      '- name: test',
      '  context: {cluster: c, user: u, namespace: edge}',
      'clusters:',
      '- name: c',
      '  cluster:',
      '    server: https://192.0.2.1:6443',
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: u',
      '  user: {token: abc}',
      ''
    ].join('\n'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads the kubeconfig, the classes and Gateway to serve, and what status publishes', () => {
    const parsed = parseCommandLine(['--kubernetes', '--kubeconfig', kubeconfig, '--gateway-class', 'edge', '--gateway', 'edge/public',
      '--publish-address', '203.0.113.10', '--publish-address', 'lb.example.com', '--admin', '9000', '--state-dir', dir], { POD_NAME: 'lila-0' });
    const { kubernetes } = parsed;
    assert.equal(kubernetes.connection.server, 'https://192.0.2.1:6443');
    assert.equal(kubernetes.connection.token, 'abc');
    assert.equal(kubernetes.connection.namespace, 'edge');
    assert.equal(kubernetes.gatewayClass, 'edge');
    assert.equal(kubernetes.gateway, 'edge/public');
    assert.deepEqual(kubernetes.publishAddresses, ['203.0.113.10', 'lb.example.com']);
    assert.equal(kubernetes.identity, 'lila-0');
    assert.equal(kubernetes.stateDir, dir);
    // Nothing to serve yet is no mistake: lila waits for a Gateway.
    const service = parsed.serviceOf('# nothing yet\n');
    assert.deepEqual(service.config.listeners, []);
    assert.equal(service.admin.port, 9000);
  });

  for (const [args, message] of [
    [['--kubernetes', '--config', 'lila.conf'], /"--kubernetes" serves what the cluster's resources say: give no mode, servers, --config, --hosts or --check with it/],
    [['round-robin', '127.0.0.1:8080', '--gateway', 'a/b'], /"--gateway" goes with --kubernetes/],
    [['--kubernetes', '--workers', '2'], /"--workers" does not go with --kubernetes/],
    [['--kubernetes', '--gateway', 'nope'], /"--gateway" must be NAMESPACE\/NAME/],
    [['--kubernetes', '--max-fails', '3'], /"--max-fails" goes in the config file, on a pool line/],
    [['--kubernetes', '--kubeconfig', '/nonexistent/kubeconfig'], /kubeconfig/]
  ]) {
    it(`refuses lila ${args.join(' ')} with one line, exit 2`, async () => {
      const { code, stderr } = await runLila(args);
      assert.equal(code, 2, stderr);
      assert.match(stderr.split('\n')[0], message);
      assert.match(stderr, /^lila: /);
    });
  }
});
