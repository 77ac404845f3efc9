'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { connectionOf } = require('../lib/kubernetes/kubeconfig');

const CA = '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n';
const CERT = '-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n';
const base64 = (text) => Buffer.from(text).toString('base64');

// As kubectl writes it (`kubectl config set-cluster --embed-certs`, set-credentials, set-context).
const KUBECTL_CONFIG = `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ${base64(CA)}
    server: https://10.1.2.3:6443
  name: prod
- cluster:
    certificate-authority: ca/ca.crt
    insecure-skip-tls-verify: true
    server: 127.0.0.1:8443/
    tls-server-name: api.internal
  name: dev
contexts:
- context:
    cluster: prod
    namespace: web
    user: admin
  name: prod
- context:
    cluster: dev
    user: dev-user
  name: dev
- context:
    cluster: dev
    user: eks
  name: eks
- context:
    cluster: dev
    user: gcp
  name: gcp
- context:
    cluster: nowhere
    user: admin
  name: broken
current-context: prod
kind: Config
preferences: {}
users:
- name: admin
  user:
    client-certificate-data: ${base64(CERT)}
    client-key-data: ${base64(KEY)}
- name: dev-user
  user:
    tokenFile: secrets/token   # read again when it rotates
- name: eks
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - eks
      - get-token
      command: aws
      env: null
- name: gcp
  user:
    auth-provider:
      name: gcp
`;

describe('connectionOf', () => {
  let dir;
  let file;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-kubeconfig-'));
    file = path.join(dir, 'config');
    fs.writeFileSync(file, KUBECTL_CONFIG);
    fs.mkdirSync(path.join(dir, 'ca'));
    fs.writeFileSync(path.join(dir, 'ca', 'ca.crt'), CA);
    fs.mkdirSync(path.join(dir, 'secrets'));
    fs.writeFileSync(path.join(dir, 'secrets', 'token'), 'dev-token\n');
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  describe('a kubeconfig', () => {
    it('takes its current-context: server, CA, client certificate and namespace', () => {
      assert.deepEqual(connectionOf({ kubeconfig: file, env: {} }), {
        server: 'https://10.1.2.3:6443',
        ca: Buffer.from(CA),
        token: undefined,
        tokenFile: undefined,
        cert: Buffer.from(CERT),
        key: Buffer.from(KEY),
        insecure: false,
        serverName: undefined,
        namespace: 'web',
        source: `${file} (context prod)`
      });
    });

    it('takes the context named, files relative to the kubeconfig, a token file, https for a bare host:port', () => {
      const connection = connectionOf({ kubeconfig: file, context: 'dev', env: {} });
      assert.equal(connection.server, 'https://127.0.0.1:8443');
      assert.deepEqual(connection.ca, Buffer.from(CA));
      assert.equal(connection.token, 'dev-token');
      assert.equal(connection.tokenFile, path.join(dir, 'secrets', 'token'));
      assert.equal(connection.insecure, true);
      assert.equal(connection.serverName, 'api.internal');
      assert.equal(connection.namespace, 'default');
      assert.equal(connection.source, `${file} (context dev)`);
    });

    it('reads a kubeconfig written as JSON, with a token and a server path', () => {
      const json = path.join(dir, 'config.json');
      fs.writeFileSync(json, JSON.stringify({
        apiVersion: 'v1',
        clusters: [{ name: 'c', cluster: { server: 'http://[::1]:8080/k8s/clusters/c-1/' } }],
        users: [{ name: 'u', user: { token: 'abc', tokenFile: 'ignored' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u', namespace: 'ns' } }],
        'current-context': 'x'
      }, null, 2));
      const connection = connectionOf({ kubeconfig: json, env: {} });
      assert.equal(connection.server, 'http://[::1]:8080/k8s/clusters/c-1');
      assert.equal(connection.token, 'abc');
      assert.equal(connection.tokenFile, undefined);
      assert.equal(connection.ca, undefined);
      assert.equal(connection.namespace, 'ns');
    });

    it('is $KUBECONFIG\'s first file when none is given, else ~/.kube/config', () => {
      const env = { KUBECONFIG: `${path.delimiter}${file}${path.delimiter}${path.join(dir, 'other')}`, KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };
      assert.equal(connectionOf({ env }).source, `${file} (context prod)`);
      const home = path.join(dir, 'home');
      fs.mkdirSync(path.join(home, '.kube'), { recursive: true });
      fs.copyFileSync(file, path.join(home, '.kube', 'config'));
      assert.equal(connectionOf({ env: { HOME: home } }).source, `${path.join(home, '.kube', 'config')} (context prod)`);
      const inPod = { HOME: home, KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };
      assert.equal(connectionOf({ env: inPod, inCluster: false }).source, `${path.join(home, '.kube', 'config')} (context prod)`);
    });

    it('refuses users whose credentials come from a program or a plugin, in one sentence', () => {
      assert.throws(() => connectionOf({ kubeconfig: file, context: 'eks', env: {} }), {
        code: 'LILA_ERR_CONFIG',
        message: `the kubeconfig ${file}: user "eks" gets its credentials from a program (exec), which lila does not run; give it a token, a tokenFile or a client certificate`
      });
      assert.throws(() => connectionOf({ kubeconfig: file, context: 'gcp', env: {} }), { code: 'LILA_ERR_CONFIG', message: /user "gcp" gets its credentials from an auth-provider plugin/ });
    });

    it('names the file and what is missing in it', () => {
      const missing = path.join(dir, 'missing');
      assert.throws(() => connectionOf({ kubeconfig: missing, env: {} }), { code: 'LILA_ERR_CONFIG', message: `cannot read the kubeconfig ${missing}: no such file` });
      assert.throws(() => connectionOf({ kubeconfig: file, context: 'staging', env: {} }), {
        code: 'LILA_ERR_CONFIG',
        message: `the kubeconfig ${file} has no context "staging" (it has: prod, dev, eks, gcp, broken)`
      });
      assert.throws(() => connectionOf({ kubeconfig: file, context: 'broken', env: {} }), { message: `the kubeconfig ${file} has no cluster "nowhere" (it has: prod, dev)` });
      const empty = path.join(dir, 'empty');
      fs.writeFileSync(empty, 'apiVersion: v1\nkind: Config\n');
      assert.throws(() => connectionOf({ kubeconfig: empty, env: {} }), { message: `the kubeconfig ${empty} has no current-context; name a context` });
      const bad = path.join(dir, 'bad');
      fs.writeFileSync(bad, 'apiVersion: v1\nclusters:\n- cluster: {server: x\n');
      assert.throws(() => connectionOf({ kubeconfig: bad, env: {} }), { message: `the kubeconfig ${bad} is not valid YAML: line 3: a flow collection is not closed` });
      const noFile = path.join(dir, 'no-ca');
      fs.writeFileSync(noFile, KUBECTL_CONFIG.replace('ca/ca.crt', 'ca/none.crt'));
      assert.throws(() => connectionOf({ kubeconfig: noFile, context: 'dev', env: {} }), {
        message: `cannot read the certificate-authority of the kubeconfig ${noFile} (${path.join(dir, 'ca', 'none.crt')}): no such file`
      });
    });
  });

  describe('in a pod', () => {
    let accountDir;
    before(() => {
      accountDir = path.join(dir, 'serviceaccount');
      fs.mkdirSync(accountDir);
      fs.writeFileSync(path.join(accountDir, 'token'), 'pod-token');
      fs.writeFileSync(path.join(accountDir, 'ca.crt'), CA);
      fs.writeFileSync(path.join(accountDir, 'namespace'), 'lila-system');
    });

    it('uses the service account and the kubernetes Service\'s address, as client-go does', () => {
      const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };
      assert.deepEqual(connectionOf({ env, serviceAccountDir: accountDir }), {
        server: 'https://10.96.0.1:443',
        ca: Buffer.from(CA),
        token: 'pod-token',
        tokenFile: path.join(accountDir, 'token'),
        cert: undefined,
        key: undefined,
        insecure: false,
        serverName: undefined,
        namespace: 'lila-system',
        source: 'in-cluster'
      });
    });

    it('brackets an IPv6 address, and takes POD_NAMESPACE first', () => {
      const env = { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443', POD_NAMESPACE: 'mine', KUBECONFIG: file };
      const connection = connectionOf({ env, inCluster: true, serviceAccountDir: accountDir });
      assert.equal(connection.server, 'https://[fd00::1]:6443');
      assert.equal(connection.namespace, 'mine');
    });

    it('goes on without a CA or a namespace file, but not without a token', () => {
      const bare = path.join(dir, 'bare');
      fs.mkdirSync(bare);
      fs.writeFileSync(path.join(bare, 'token'), 't\n');
      const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };
      const connection = connectionOf({ env, serviceAccountDir: bare });
      assert.equal(connection.ca, undefined);
      assert.equal(connection.token, 't');
      assert.equal(connection.namespace, 'default');
      fs.rmSync(path.join(bare, 'token'));
      assert.throws(() => connectionOf({ env, serviceAccountDir: bare }), {
        code: 'LILA_ERR_CONFIG',
        message: `cannot read the service account token (${path.join(bare, 'token')}): no such file`
      });
    });

    it('says lila is not in a pod when the Service\'s variables are missing', () => {
      assert.throws(() => connectionOf({ env: { KUBERNETES_SERVICE_HOST: '10.96.0.1' }, serviceAccountDir: accountDir }), {
        code: 'LILA_ERR_CONFIG',
        message: /^lila is not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set/
      });
      assert.throws(() => connectionOf({ env: {}, inCluster: true, serviceAccountDir: accountDir }), { message: /^lila is not in a pod/ });
    });
  });
});
