'use strict';

// doc/fleet.md's commands, as a reader runs them: its quick start against a real etcd (the
// store's address and the config's backends and port swapped for the test's own), and every
// other `lila` line read as lila would read it.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseCommandLine } = require('../lib/cli');
const { cleanup, freePorts, onCleanup, request, runLila, spawnLila, startHttpBackend, untilWritten } = require('./helpers');
const { codeBlocks, commandsOf, otherCommands } = require('./doc-blocks');
const { needEtcd, startEtcd } = require('./etcd');
const { Pki } = require('./pki');

const DOC = fs.readFileSync(path.join(__dirname, '..', 'doc', 'fleet.md'), 'utf8');
const BLOCKS = codeBlocks(DOC);
const VARIABLES = { LILA_ADMIN_TOKEN: 'secret' };
const COMMANDS = commandsOf(BLOCKS, VARIABLES);
// The other programs of its ```sh blocks: who runs them, or why no test can.
const NOT_LILA = {
  etcd: 'test/etcd.js starts etcd as the quick start does, on ports of its own',
  etcdctl: 'etcd\'s own tool; test/store-etcd.test.js sets up the same user, role and auth through etcd\'s gateway',
  curl: 'test/fleet-store.test.js sends the same GET and PUT /config, with ETag and If-Match'
};

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
});
