'use strict';

// doc/kubernetes.md's commands, as a reader runs them, against the test's cluster: the
// manifests of deploy/kubernetes/ applied for real, the doc's gateway.yaml, `kubectl get` saying
// what lila made of it, and lila started as the doc starts it outside a cluster.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { cleanup, freePorts, onCleanup, spawnLila, nextLine } = require('../helpers');
const { codeBlocks, commandsOf, otherCommands } = require('../doc-blocks');
const { needKubernetes } = require('../kubernetes');
const { startCluster, startPods, publish, get, eventually } = require('./world');

const ROOT = path.join(__dirname, '..', '..');
const DOC = fs.readFileSync(path.join(ROOT, 'doc', 'kubernetes.md'), 'utf8');
const BLOCKS = codeBlocks(DOC);
const COMMANDS = commandsOf(BLOCKS, {});
// The other programs of its ```sh blocks: who runs them, or why no test can.
const NOT_LILA = {
  kubectl: 'this file runs each kubectl line of the quick start against a real kube-apiserver',
  sudo: 'how test/kubernetes.test.js is run: CI runs it as root',
  '(cd': 'how .ci/run builds kube-apiserver, kubectl and etcd',
  go: 'the same: .ci/run builds them from .ci/kubernetes and .ci/etcd'
};

// The doc's file `name`: the block that starts `# <name>`.
function docFile(name) {
  const block = BLOCKS.find((candidate) => candidate.lines.length > 0 && candidate.lines[0].text === `# ${name}`);
  assert.ok(block !== undefined, `doc/kubernetes.md has no block starting "# ${name}"`);
  return block.lines.slice(1).map((line) => line.text).join('\n') + '\n';
}

describe('doc/kubernetes.md', function () {
  this.timeout(120000);
  before(function () {
    needKubernetes(this);
  });
  after(cleanup);

  it('names who runs each command that is not lila\'s', () => {
    assert.deepEqual(otherCommands(BLOCKS).filter(({ program }) => !Object.hasOwn(NOT_LILA, program)), []);
  });

  it('runs its quick start: deploy/kubernetes/, gateway.yaml, and lila with a kubeconfig', async function () {
    this.timeout(240000);
    const cluster = await startCluster();
    const kubectl = async (line) => {
      const args = line.replace(/\s+#.*$/, '').trim().split(/\s+/).slice(1);
      const result = await cluster.kubectl(args);
      assert.equal(result.code, 0, `${line}\n${result.stderr}`);
      return result.stdout;
    };
    const lines = otherCommands(BLOCKS).filter(({ program }) => program === 'kubectl').map(({ text }) => text);
    const [deploy, gateway, status] = lines.filter((line) => !line.includes('--server-side'));
    assert.equal(deploy, 'kubectl apply -f deploy/kubernetes/');
    // The manifests, for real: the Namespace first, as kubectl's order of files has it.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-k8s-doc-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const cwd = process.cwd();
    process.chdir(ROOT);
    try {
      await kubectl(deploy);
    } finally {
      process.chdir(cwd);
    }
    // The Services gateway.yaml's route names, with pods behind them.
    const pods = await startPods(3);
    for (const [name, addresses] of [['api', [pods.addresses[0]]], ['api-next', [pods.addresses[1]]], ['site', [pods.addresses[2]]]]) {
      await publish(cluster, 'default', name, { port: pods.port, addresses });
    }
    fs.writeFileSync(path.join(dir, 'gateway.yaml'), docFile('gateway.yaml'));
    process.chdir(dir);
    try {
      await kubectl(gateway);
    } finally {
      process.chdir(cwd);
    }
    // lila as the doc runs it outside a cluster, with the test's kubeconfig and admin port.
    const [entry] = COMMANDS.filter((item) => item.args.includes('--kubernetes'));
    const [admin] = await freePorts(1);
    const args = entry.args.map((arg) => (arg === '~/.kube/config' ? cluster.kubeconfig() : arg === '9000' ? `127.0.0.1:${admin}` : arg));
    const lila = spawnLila([...args, '--state-dir', dir]);
    await nextLine(lila, /lila: kubernetes: following .*/, 60000);
    const seen = await eventually(async () => {
      const answer = await get(80, '/', { host: 'www.example.com' });
      return answer.status === 200 ? answer.json.pod : null;
    }, 'www.example.com served on port 80');
    assert.equal(seen, pods.addresses[2]);
    const api = new Map();
    for (let i = 0; i < 20; i++) {
      const { json } = await get(80, '/api/x', { host: 'www.example.com' });
      api.set(json.pod, (api.get(json.pod) || 0) + 1);
    }
    assert.deepEqual([api.get(pods.addresses[0]), api.get(pods.addresses[1])], [18, 2]);
    const table = await eventually(async () => {
      const text = await kubectl(status);
      return /gateway\.gateway\.networking\.k8s\.io\/web\s+lila\s+203\.0\.113\.10\s+True/.test(text.replace(/\s+/g, ' ')) || /web\s+lila\s+203\.0\.113\.10\s+True/.test(text) ? text : null;
    }, 'kubectl get gateway says PROGRAMMED True at 203.0.113.10');
    assert.match(table, /www\.example\.com/);
  });
});
