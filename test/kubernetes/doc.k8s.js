// doc/kubernetes.md's commands, as a reader runs them, against the run's cluster: the bundle's
// ConfigMap made and deploy/kubernetes/ applied for real (with bundle/, then image/), the doc's
// gateway.yaml, `kubectl get` saying what lila made of it, lila started as the doc starts it
// outside a cluster, the rollout restart and the LoadBalancer Service pending. Each kubectl
// line of the doc is run here, or named with why it cannot be.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { cleanup, freePorts, onCleanup, spawnLila, nextLine } = require('../helpers');
const { codeBlocks, commandsOf, otherCommands, shellWords } = require('../doc-blocks');
const { needKubernetes } = require('../kubernetes');
const { useCluster, startPods, publish, get, eventually } = require('./world');

const ROOT = path.join(__dirname, '..', '..');
const DOC = fs.readFileSync(path.join(ROOT, 'doc', 'kubernetes.md'), 'utf8');
const BLOCKS = codeBlocks(DOC);
const COMMANDS = commandsOf(BLOCKS, {});
const { version: VERSION } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
// The other programs of its ```sh blocks: who runs them, or why no test can.
const NOT_LILA = {
  kubectl: 'this file runs the kubectl lines against a real kube-apiserver, but those of NOT_RUN',
  node: 'this file runs scripts/kubernetes-bundle.js as the quick start does, into a copy of deploy/',
  docker: 'no docker engine runs in CI: test/kubernetes/deploy.k8s.js builds the Dockerfile its own way (test/kubernetes/dockerfile.js) and runs its image',
  kind: 'no kind cluster in CI: test/kubernetes/deploy.k8s.js runs deploy/kubernetes/image/\'s pod with the Dockerfile\'s image',
  minikube: 'no minikube in CI, for the same reason',
  sudo: 'how test/kubernetes.test.js is run: CI runs it as root',
  '(cd': 'how .ci/run builds kube-apiserver, kubectl and etcd',
  go: 'the same: .ci/run builds them from .ci/kubernetes and .ci/etcd'
};
// The kubectl lines no test can run, by a word of theirs.
const NOT_RUN = {
  'standard-install.yaml': 'CI has no network: test/kubernetes.js installs the same release\'s CRDs from its Go module',
  'experimental-install.yaml': 'the same: the tests install the standard channel and the experimental TLSRoute and TCPRoute',
  'port-forward': 'it needs a kubelet, and no pod runs in the test cluster'
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

  it('runs its quick start with the bundle\'s ConfigMap, gateway.yaml, and lila with a kubeconfig; then image/, the restart, the pending Service', async function () {
    this.timeout(240000);
    const cluster = await useCluster();
    const lines = otherCommands(BLOCKS).filter(({ program }) => program === 'kubectl').map(({ text }) => text);
    const ran = new Set();
    // deploy/ as in the clone, where the quick start's `node` line writes the ConfigMap.
    const clone = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-k8s-doc-'));
    onCleanup(() => fs.rmSync(clone, { recursive: true, force: true }));
    // A kubectl line of the doc, in `cwd` (the copy of the clone's deploy/), as admin.
    const kubectl = async (wanted, cwd = clone) => {
      const line = lines.find((candidate) => wanted.test(candidate));
      assert.ok(line !== undefined, `doc/kubernetes.md has no kubectl line matching ${wanted}`);
      ran.add(line);
      const here = process.cwd();
      process.chdir(cwd);
      try {
        const result = await cluster.kubectl(shellWords(line, {}).slice(1));
        assert.equal(result.code, 0, `${line}\n${result.stderr}`);
        return result.stdout;
      } finally {
        process.chdir(here);
      }
    };
    fs.cpSync(path.join(ROOT, 'deploy'), path.join(clone, 'deploy'), { recursive: true, filter: (file) => path.basename(file) !== 'configmap.yaml' });
    const [bundle] = otherCommands(BLOCKS).filter(({ program }) => program === 'node');
    const [, script, ...rest] = shellWords(bundle.text, {});
    assert.deepEqual([script, rest], ['scripts/kubernetes-bundle.js', []]);
    execFileSync(process.execPath, [path.join(ROOT, script), path.join(clone, 'deploy', 'kubernetes', 'bundle', 'configmap.yaml')], { stdio: ['ignore', 'ignore', 'inherit'] });

    await kubectl(/--server-side -f deploy\/kubernetes\/ -f deploy\/kubernetes\/bundle\/$/);
    const configMap = await cluster.request('GET', '/api/v1/namespaces/lila-system/configmaps/lila-bundle');
    assert.equal(configMap.metadata.annotations['lila-lb.dev/version'], VERSION);
    // The Services gateway.yaml's route names, with pods behind them.
    const pods = await startPods(3);
    for (const [name, addresses] of [['api', [pods.addresses[0]]], ['api-next', [pods.addresses[1]]], ['site', [pods.addresses[2]]]]) {
      await publish(cluster, 'default', name, { port: pods.port, addresses });
    }
    fs.writeFileSync(path.join(clone, 'gateway.yaml'), docFile('gateway.yaml'));
    await kubectl(/^kubectl apply -f gateway\.yaml/);
    // lila as the doc runs it outside a cluster, with the test's kubeconfig and admin port.
    const [entry] = COMMANDS.filter((item) => item.args.includes('--kubernetes'));
    const [admin] = await freePorts(1);
    const args = entry.args.map((arg) => (arg === '~/.kube/config' ? cluster.kubeconfig() : arg === '9000' ? `127.0.0.1:${admin}` : arg));
    const lila = spawnLila([...args, '--state-dir', clone]);
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
      const text = await kubectl(/^kubectl get gateway,httproute -A/);
      return /web\s+lila\s+203\.0\.113\.10\s+True/.test(text) ? text : null;
    }, 'kubectl get gateway says PROGRAMMED True at 203.0.113.10');
    assert.match(table, /www\.example\.com/);

    // A new ConfigMap is run once the pods start again: the restart changes the pod template.
    await kubectl(/rollout restart deployment\/lila$/);
    const restarted = await cluster.request('GET', '/apis/apps/v1/namespaces/lila-system/deployments/lila');
    assert.ok(restarted.spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt'], JSON.stringify(restarted.spec.template.metadata));
    // The image's way: the same Deployment, now of the image the doc's `docker build` tags.
    await kubectl(/--server-side -f deploy\/kubernetes\/ -f deploy\/kubernetes\/image\/$/);
    const deployment = await cluster.request('GET', '/apis/apps/v1/namespaces/lila-system/deployments/lila');
    assert.equal(deployment.spec.template.spec.containers[0].image, `lila-lb:${VERSION}`);
    assert.equal(deployment.spec.template.spec.initContainers, undefined);
    assert.ok(otherCommands(BLOCKS).some(({ program, text }) => program === 'docker' && text === `docker build -t lila-lb:${VERSION} .`));
    // No load balancer here, as on kind and minikube: EXTERNAL-IP <pending>.
    const service = await kubectl(/get service lila$/);
    assert.match(service, /^lila\s+LoadBalancer\s+\S+\s+<pending>\s+80:\d+\/TCP,443:\d+\/TCP/m);

    const unexplained = lines.filter((line) => !ran.has(line) && !Object.keys(NOT_RUN).some((word) => line.includes(word)));
    assert.deepEqual(unexplained, [], 'kubectl lines of the doc neither run here nor named in NOT_RUN');
  });
});
