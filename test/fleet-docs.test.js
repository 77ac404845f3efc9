'use strict';

// doc/fleet.md's commands, as a reader runs them: its quick start against a real etcd (the
// store's address and the config's backends and port swapped for the test's own), its members
// on one machine in a network namespace (as root: the namespace's name and addresses swapped for
// the test's own), and every other `lila` line read as lila would read it.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const { spawn, spawnSync } = require('node:child_process');
const { parseCommandLine } = require('../lib/cli');
const { cleanup, freePorts, onCleanup, request, runLila, spawnLila, startHttpBackend, untilWritten } = require('./helpers');
const { codeBlocks, commandsOf, otherCommands, shellWords } = require('./doc-blocks');
const { needEtcd, startEtcd } = require('./etcd');
const { needMachines } = require('./fleet-machines');
const { Pki } = require('./pki');

const DOC = fs.readFileSync(path.join(__dirname, '..', 'doc', 'fleet.md'), 'utf8');
const BLOCKS = codeBlocks(DOC);
const VARIABLES = { LILA_ADMIN_TOKEN: 'secret' };
const COMMANDS = commandsOf(BLOCKS, VARIABLES);
// The other programs of its ```sh blocks: who runs them, or why no test can.
const NOT_LILA = {
  etcd: 'test/etcd.js starts etcd as the doc does, on ports of its own (and on the namespace\'s cable, as the doc\'s second etcd line)',
  ip: 'the test of members on one machine runs each ip line as it is, with a namespace name and addresses of its own',
  etcdctl: 'etcd\'s own tool; test/store-etcd.test.js sets up the same user, role and auth through etcd\'s gateway',
  curl: 'test/fleet-store.test.js sends the same GET and PUT /config, with ETag and If-Match'
};

const LILA = path.join(__dirname, '..', 'lila');
// The namespace of "Several members on one machine", and its addresses, as this test has them:
// names of its own, and a subnet no network of the machine uses (198.18.0.0/15 is for tests).
const NAMESPACE = `lila${process.pid}`.slice(0, 15);
const SUBNET = `198.18.${process.pid % 250}`;

function temporaryDirectory() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-fleet-doc-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// The doc's file `name`: the block that starts `# <name>`.
function docFile(name) {
  const block = BLOCKS.find((candidate) => candidate.lines.length > 0 && candidate.lines[0].text === `# ${name}`);
  assert.ok(block !== undefined, `doc/fleet.md has no block starting "# ${name}"`);
  return block.lines.slice(1).map((line) => line.text).join('\n') + '\n';
}

describe('doc/fleet.md', function () {
  this.timeout(60000);
  afterEach(cleanup);

  it('names who runs each command that is not lila\'s', () => {
    assert.deepEqual(otherCommands(BLOCKS).filter(({ program }) => !Object.hasOwn(NOT_LILA, program)), []);
  });

  it('has lila lines that lila reads as it would run them', () => {
    const pki = new Pki();
    onCleanup(() => pki.remove());
    const dir = temporaryDirectory();
    fs.writeFileSync(path.join(dir, 'etcd-ca.pem'), pki.ca);
    fs.writeFileSync(path.join(dir, 'lila.conf'), docFile('lila.conf'));
    assert.ok(COMMANDS.length >= 3, COMMANDS.map((entry) => entry.text).join('\n'));
    for (const entry of COMMANDS) {
      if (entry.args[0] === 'push') continue;
      const cwd = process.cwd();
      process.chdir(dir);
      try {
        const parsed = parseCommandLine(entry.args, {});
        assert.ok(parsed.fleet !== undefined, `line ${entry.line}: ${entry.text} runs no fleet member`);
      } finally {
        process.chdir(cwd);
      }
    }
  });

  describe('quick start', () => {
    before(function () {
      needEtcd(this);
    });

    it('pushes lila.conf into etcd and runs it on a member', async () => {
      const etcd = await startEtcd();
      const [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
      const [port] = await freePorts(1);
      const dir = temporaryDirectory();
      // The doc's backends and port, as the test has them.
      const config = docFile('lila.conf').replace('10.0.0.1:8080', a.address).replace('10.0.0.2:8080', b.address)
        .replace(/^listen 8080$/m, `listen 127.0.0.1:${port}`);
      fs.writeFileSync(path.join(dir, 'lila.conf'), config);
      const quick = COMMANDS.filter((entry) => entry.args.includes('etcd://127.0.0.1:2379'));
      assert.deepEqual(quick.map((entry) => entry.args[0]), ['push', '--store']);
      const local = (args) => args.map((arg) => (arg === 'etcd://127.0.0.1:2379' ? etcd.url : arg === '9000' ? '0' : arg));
      const pushed = await runLila(local(quick[0].args), { cwd: dir });
      assert.equal(pushed.code, 0, pushed.stderr);
      const member = spawnLila([...local(quick[1].args), '--state-dir', dir], { cwd: dir });
      await untilWritten(member, () => (/^lila: store: following /m.test(member.stderr) ? true : null), 'following line', 10000);
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push((await request(port, { path: '/' })).body);
      assert.deepEqual(answers.sort(), ['A', 'A', 'B', 'B']);
    });
  });

  describe('several members on one machine', () => {
    before(function () {
      needEtcd(this);
      needMachines(this);
    });

    it('runs a second member in a network namespace, which serves the fleet\'s configuration and applies a drain made on the first', async () => {
      const block = BLOCKS.find((candidate) => candidate.lines.some((line) => line.text.startsWith('ip netns add lila2')));
      const removal = BLOCKS.find((candidate) => candidate.lines.length === 1 && candidate.lines[0].text.startsWith('ip netns del lila2'));
      assert.ok(block !== undefined && removal !== undefined, 'doc/fleet.md has no block that makes the namespace lila2, or none that removes it');
      const ours = (text) => text.replace(/\blila2\b/g, NAMESPACE).replace(/\b10\.99\.0\./g, `${SUBNET}.`);
      // Each line's commands, as the shell runs them one after the other.
      const lines = block.lines.map((line) => ours(line.text).replace(/(^|\s)#.*$/, '').split('&&').map((part) => shellWords(part, {})));
      const [made, [etcdLine], [memberLine]] = [lines.slice(0, 3).flat(), lines[3], lines[4]];
      assert.deepEqual([etcdLine[0], memberLine.slice(0, 4)], ['etcd', ['ip', 'netns', 'exec', NAMESPACE]]);
      // Removed whatever happens, even should mocha exit first: a namespace outlives its processes.
      const remove = () => spawnSync('ip', ['netns', 'del', NAMESPACE], { stdio: 'ignore' });
      process.once('exit', remove);
      onCleanup(() => {
        process.removeListener('exit', remove);
        remove();
      });
      for (const words of made) {
        assert.equal(words[0], 'ip', words.join(' '));
        const ran = spawnSync('ip', words.slice(1), { encoding: 'utf8' });
        assert.equal(ran.status, 0, `${words.join(' ')}: ${ran.stderr}`);
      }

      const etcd = await startEtcd({ hosts: [`${SUBNET}.1`] });
      const [a, b] = await Promise.all([backendOn(`${SUBNET}.1`, 'A'), backendOn(`${SUBNET}.1`, 'B')]);
      const [port] = await freePorts(1);
      const dir = temporaryDirectory();
      const config = docFile('lila.conf').replace('10.0.0.1:8080', a.address).replace('10.0.0.2:8080', b.address)
        .replace(/^listen 8080$/m, `listen ${port}`);
      fs.writeFileSync(path.join(dir, 'lila.conf'), config);
      const local = (args) => args.map((arg) => (arg === 'etcd://127.0.0.1:2379' ? etcd.url : arg === '9000' ? '0' : arg));
      const quick = COMMANDS.filter((entry) => entry.args.includes('etcd://127.0.0.1:2379'));
      assert.equal((await runLila(local(quick[0].args), { cwd: dir })).code, 0);
      const first = spawnLila([...local(quick[1].args), '--state-dir', dir, '--admin-token', 'secret'], { cwd: dir });
      const firstAdmin = await untilWritten(first, () => /^lila: admin API listening on http:\/\/127\.0\.0\.1:(\d+)$/m.exec(first.stderr)?.[1], 'admin line', 10000);
      // The doc's second member, its store on the cable's end: the etcd of the test, on its port.
      const lila = memberLine.indexOf('lila');
      const args = memberLine.slice(lila + 1).map((arg) => arg.replace(`${SUBNET}.1:2379`, `${SUBNET}.1:${etcd.members[0].clientPort}`));
      const second = spawnIn([...memberLine.slice(0, lila), process.execPath, LILA, ...args, '--state-dir', temporaryDirectory()]);
      for (const member of [first, second]) {
        await untilWritten(member, () => (/^lila: store: following /m.test(member.stderr) ? true : null), 'following line', 10000);
      }
      assert.match(second.stderr, /^lila: admin API listening on http:\/\/127\.0\.0\.1:9000$/m);
      const answers = async (host) => {
        const seen = [];
        for (let i = 0; i < 4; i++) seen.push((await request(port, { host, path: '/' })).body);
        return seen.sort();
      };
      assert.deepEqual(await answers('127.0.0.1'), ['A', 'A', 'B', 'B']);
      assert.deepEqual(await answers(`${SUBNET}.2`), ['A', 'A', 'B', 'B']);

      const drainedThere = untilWritten(second, () => (/^lila: backend .* drained through the fleet$/m.test(second.stderr) ? true : null), 'drain line', 10000);
      const drained = await request(Number(firstAdmin), {
        method: 'POST', path: `/pools/web/backends/${encodeURIComponent(a.address)}/drain`, headers: { authorization: 'Bearer secret' }
      });
      assert.equal(JSON.parse(drained.body).fleet, 'shared', drained.body);
      await drainedThere;
      assert.deepEqual(await answers(`${SUBNET}.2`), ['B', 'B', 'B', 'B']);

      second.child.kill('SIGTERM');
      await second.closed;
      const removed = shellWords(ours(removal.lines[0].text), {});
      const ran = spawnSync(removed[0], removed.slice(1), { encoding: 'utf8' });
      assert.equal(ran.status, 0, ran.stderr);
      assert.doesNotMatch(spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout, new RegExp(`^${NAMESPACE}\\b`, 'm'));
    });
  });
});

// An http backend on an address of this machine (the namespace's cable) that answers its name.
async function backendOn(host, name) {
  const server = http.createServer((req, res) => {
    req.resume();
    res.end(name);
  });
  server.listen(0, host);
  await once(server, 'listening');
  onCleanup(() => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(resolve);
  }));
  return { address: `${host}:${server.address().port}` };
}

// A program run as spawnLila runs lila (its stderr kept, killed on cleanup): here, `ip netns exec`.
function spawnIn(command) {
  const child = spawn(command[0], command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  const run = { child, stdout: '', stderr: '', closed: null };
  child.stdout.setEncoding('utf8').on('data', (text) => { run.stdout += text; });
  child.stderr.setEncoding('utf8').on('data', (text) => { run.stderr += text; });
  run.closed = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  onCleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return run.closed.catch(() => {});
  });
  return run;
}
