'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { version } = require('../package.json');
const { onCleanup, cleanup, startHttpBackend, request, sha256 } = require('./helpers');
const { formulaFor, repositoryUrl } = require('../scripts/homebrew-formula');

const ROOT = path.join(__dirname, '..');
const FORMULA = path.join(ROOT, 'packaging', 'homebrew', 'lila.rb');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const INSTALL_LINES = installLines(README);
// Install's commands that other files run, by what they run.
const RUN_ELSEWHERE = new Map([
  ['npm start', 'test/demo.test.js'],
  ['npm ci', '.ci/run, before the tests'],
  ['npm test', '.ci/run, on every Node version']
]);
const STARTUP_LINE = /^lila: (\S+) \((\S+)\) listening on 127\.0\.0\.1:(\d+) -> (\d+) servers?\n/m;
const TRY_HELP = 'Try "lila --help" for more information.';
// Installed and bundled executables run through `#!/usr/bin/env node`: make that the node
// running the tests, and npm the one beside it when there is one.
const ENV = { ...process.env, PATH: [path.dirname(process.execPath), process.env.PATH].join(path.delimiter) };

describe('install paths', function () {
  this.timeout(60000);

  const directories = [];
  // Directories outlive single tests (the packed tarball, the build); removed after all of them.
  const temporaryDirectory = () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-install-'));
    directories.push(directory);
    return directory;
  };
  let packed;

  before(async () => {
    const destination = temporaryDirectory();
    const result = await run('npm', ['pack', '--json', '--pack-destination', destination], { cwd: ROOT });
    assert.equal(result.code, 0, result.stderr);
    const [summary] = JSON.parse(result.stdout);
    const file = path.join(destination, summary.filename);
    packed = { file, files: summary.files.map((entry) => entry.path), sha256: sha256(fs.readFileSync(file)) };
  });

  afterEach(cleanup);

  after(() => {
    for (const directory of directories) fs.rmSync(directory, { recursive: true, force: true });
  });

  describe('npm package', () => {
    it('names one repository: package.json\'s repository, homepage and bugs, and README\'s clone line', () => {
      const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
      const repository = repositoryUrl(pkg);
      assert.match(repository, /^https:\/\/github\.com\/[^/]+\/[^/]+$/);
      assert.equal(pkg.homepage, `${repository}#readme`);
      assert.deepEqual(pkg.bugs, { url: `${repository}/issues` });

      const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
      assert.match(readme, new RegExp(`^git clone ${repository.replace(/[.]/g, '\\.')} `, 'm'));
      const elsewhere = (readme.match(/https:\/\/github\.com\/[^\s)`'"]*/g) || []).filter((url) => !url.startsWith(repository));
      assert.deepEqual(elsewhere, [], 'README names no other repository');
      assert.doesNotMatch(readme, /<owner>|<this repository>/);
    });

    it('is installed from a clone, as README says, until it is on the npm registry', () => {
      // No `npm publish` yet: README tells no one to install lila-lb from the registry. The
      // release that publishes it changes this, and README's Install.
      assert.doesNotMatch(README, /npm (install|i) (-g |--global )?lila-lb\b(?!` finds nothing)/);
      assert.match(README, /^npm install -g \.  /m);
    });

    it('contains only README.md, LICENSE, package.json, lila, lib/ and types/', () => {
      const allowed = new Set(['README.md', 'package.json', 'lila', 'LICENSE', 'LICENSE.md', 'LICENSE.txt']);
      const extra = packed.files.filter((file) => !allowed.has(file) && !file.startsWith('lib/') && !file.startsWith('types/'));
      assert.deepEqual(extra, []);

      const expected = ['README.md', 'package.json', 'lila', ...listFiles(path.join(ROOT, 'lib'), 'lib'), ...listFiles(path.join(ROOT, 'types'), 'types')];
      for (const license of ['LICENSE', 'LICENSE.md', 'LICENSE.txt']) {
        if (fs.existsSync(path.join(ROOT, license))) expected.push(license);
      }
      assert.deepEqual([...packed.files].sort(), expected.sort());
    });

    it('installs globally from the tarball without the network and balances requests', async () => {
      const prefix = temporaryDirectory();
      const install = await run('npm', [
        'install', '--global', '--prefix', prefix, '--cache', path.join(prefix, '.npm-cache'),
        '--offline', '--no-audit', '--no-fund', '--no-update-notifier', packed.file
      ]);
      assert.equal(install.code, 0, install.stderr);
      const lila = path.join(prefix, 'bin', 'lila');

      const result = await run(lila, ['--version']);
      assert.deepEqual(result, { code: 0, signal: null, stdout: `${version}\n`, stderr: '' });

      await assertBalancesAcrossTwo(lila, { cwd: prefix });
    });
  });

  describe('README\'s install lines', () => {
    // What `git clone` would give, this tree's changes included: the tests have no network.
    let clone;

    before(async function () {
      this.timeout(120000);
      clone = await cloneOfTree(path.join(temporaryDirectory(), 'lila'));
    });

    it('runs every command of Install, or names the test that does', () => {
      const commands = INSTALL_LINES.flatMap((entry) => entry.commands.map((words) => ({ line: entry.line, text: words.join(' ') })));
      const unknown = commands.filter(({ text }) => !RUN_ELSEWHERE.has(text) && !/^(git clone|cd|npm (install|pack|run bundle)|install) /.test(`${text} `));
      assert.deepEqual(unknown, []);
      for (const text of ['npm install -g .', 'npm pack', 'npm run bundle']) {
        assert.ok(commands.some((command) => command.text === text), `README's Install runs ${text}`);
      }
      assert.ok(commands.some(({ text }) => /^npm install -g \.\/lila-lb-[^ ]+\.tgz$/.test(text)), 'README installs the packed tarball');
      assert.ok(commands.some(({ text }) => /^npm install git\+https:/.test(text)), 'README installs from a git URL');
    });

    it('installs from git without the dev tools: no script npm runs to prepare a git dependency', () => {
      // With one of these, `npm install git+https://...` first installs every devDependency
      // (mocha, playwright-core, ...) into its clone of lila, only to pack it (npm's pacote,
      // lib/git.js): `npm run bundle` is not called `build` for that reason.
      const { scripts } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
      const preparing = ['preinstall', 'install', 'postinstall', 'build', 'prepack', 'prepare'].filter((name) => Object.hasOwn(scripts, name));
      assert.deepEqual(preparing, []);
    });

    for (const entry of INSTALL_LINES) {
      if (entry.commands.every((words) => RUN_ELSEWHERE.has(words.join(' ')))) continue;
      it(`runs README line ${entry.line}: ${entry.text}`, async () => {
        const prefix = temporaryDirectory();
        // A block that clones runs in the clone; the others in a program's folder.
        const program = temporaryDirectory();
        fs.writeFileSync(path.join(program, 'package.json'), '{ "name": "program", "private": true }\n');
        const cwd = entry.inClone ? clone : program;
        for (const words of entry.commands) {
          if (RUN_ELSEWHERE.has(words.join(' '))) continue;
          await runInstallCommand(words, { cwd, clone, prefix });
        }

        const lila = path.join(prefix, 'bin', 'lila');
        if (entry.commands.some((words) => words[0] === 'git')) {
          // The clone's URL is the repository's, and `cd` goes into it.
          const [[, , url], [, into]] = entry.commands;
          assert.equal(url, repositoryUrl(require('../package.json')));
          assert.equal(into, path.basename(url));
        } else if (entry.inClone) {
          assert.deepEqual(await run(lila, ['--version']), { code: 0, signal: null, stdout: `${version}\n`, stderr: '' });
          // `npm install -g .` links the clone (README: "a link"); a tarball is copied.
          const global = entry.commands.find((words) => words.join(' ').startsWith('npm install -g '));
          if (global !== undefined) {
            const installed = path.join(prefix, 'lib', 'node_modules', 'lila-lb');
            assert.equal(fs.lstatSync(installed).isSymbolicLink(), global[3] === '.', global.join(' '));
          }
        } else {
          const script = "const lila = require('lila-lb'); console.log(require('lila-lb/package.json').version, typeof lila.createProxy)";
          const result = await run(process.execPath, ['-e', script], { cwd: program });
          assert.deepEqual(result, { code: 0, signal: null, stdout: `${version} function\n`, stderr: '' });
        }
      });
    }
  });

  describe('single-file build', () => {
    let alone;
    let lila;

    before(async () => {
      const result = await run(process.execPath, [path.join(ROOT, 'scripts', 'build.js')], { cwd: ROOT });
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^dist\/lila: \d+ modules, \d+ bytes\n$/);
      alone = temporaryDirectory();
      lila = path.join(alone, 'lila');
      fs.copyFileSync(path.join(ROOT, 'dist', 'lila'), lila);
    });

    it('writes dist/lila as one executable node script', () => {
      const built = path.join(ROOT, 'dist', 'lila');
      assert.equal(fs.statSync(built).mode & 0o777, 0o755);
      assert.equal(fs.readFileSync(built, 'utf8').split('\n')[0], '#!/usr/bin/env node');
      assert.deepEqual(fs.readdirSync(alone), ['lila']);
    });

    it('prints the version and the usage when copied alone into a folder', async () => {
      const versionResult = await run(lila, ['--version'], { cwd: alone });
      assert.deepEqual(versionResult, { code: 0, signal: null, stdout: `${version}\n`, stderr: '' });

      const help = await run(lila, ['--help'], { cwd: alone });
      assert.equal(help.code, 0);
      assert.ok(help.stdout.startsWith('Usage: lila'), help.stdout);
      assert.equal(help.stderr, '');
    });

    it('exits 2 with one line and a hint for a usage error', async () => {
      const result = await run(lila, ['round-robin', 'localhost'], { cwd: alone });

      assert.deepEqual(result.stderr.split('\n'), [
        'lila: server "localhost" needs a port, as in "localhost:8080"', TRY_HELP, ''
      ]);
      assert.equal(result.stdout, '');
      assert.deepEqual({ code: result.code, signal: result.signal }, { code: 2, signal: null });
    });

    it('balances requests across two backends', async () => {
      await assertBalancesAcrossTwo(lila, { cwd: alone });
    });

    it('loads a balancer module given by absolute path and by relative path', async () => {
      const module = path.join(alone, 'first.js');
      fs.writeFileSync(module, 'module.exports = class { constructor(b) { this.b = b; } pick() { return this.b[0]; } };\n');
      const a = await startHttpBackend('A');
      const b = await startHttpBackend('B');

      for (const mode of [module, './first.js']) {
        const proxy = await startExecutable(lila, [mode, a.address, b.address, '-a', '127.0.0.1', '-p', '0'], { cwd: alone });
        const bodies = [];
        for (let i = 0; i < 3; i++) bodies.push((await request(proxy.port, { agent: false })).body);
        assert.deepEqual(bodies, ['A', 'A', 'A'], `mode ${mode}`);
      }
    });

    it('names a missing balancer module as lila does', async () => {
      const result = await run(lila, ['./missing.js', '127.0.0.1:1'], { cwd: alone });

      assert.deepEqual(result.stderr.split('\n'), ['lila: cannot load balancer module "./missing.js": no such file', TRY_HELP, '']);
      assert.equal(result.code, 2);
    });
  });

  describe('Homebrew formula', () => {
    const formula = fs.readFileSync(FORMULA, 'utf8');

    it('installs the npm tarball of the version in package.json', () => {
      const url = /^\s*url "([^"]+)"$/m.exec(formula);
      assert.ok(url, 'the formula has no url');
      assert.equal(url[1], `https://registry.npmjs.org/lila-lb/-/lila-lb-${version}.tgz`);
      assert.match(formula, /^\s*sha256 "[0-9a-f]{64}"$/m);
      assert.match(formula, /^\s*depends_on "node"$/m);
    });

    it('has the sha256 of the tarball npm pack makes of this tree, as scripts/homebrew-formula.js writes it', () => {
      // npm packs deterministically (fixed mtimes, same bytes on every Node version), so the
      // tarball `npm publish` would send now is the one packed above. Any change to what is
      // packed (lib/, README.md, package.json) changes it: `npm run formula` writes it again.
      const stale = 'packaging/homebrew/lila.rb is not that of this tree: run "npm run formula"';
      assert.equal(/^\s*sha256 "([0-9a-f]{64})"$/m.exec(formula)[1], packed.sha256, stale);
      assert.equal(formula, formulaFor(packed.file), stale);
    });

    it('is valid Ruby', function () {
      const check = spawnSync('ruby', ['-c', FORMULA], { encoding: 'utf8' });
      if (check.error && check.error.code === 'ENOENT') this.skip();
      assert.equal(check.status, 0, check.stderr);
      assert.equal(check.stdout, 'Syntax OK\n');
    });
  });
});

/**
 * The commands of README's Install: each line of its ```sh blocks, comment taken off, split at
 * `&&` into words (README quotes nothing there).
 *
 * @param {string} readme
 * @returns {{line: number, text: string, inClone: boolean, commands: string[][]}[]}
 */
function installLines(readme) {
  const lines = readme.split('\n');
  const start = lines.indexOf('## Install');
  const end = lines.findIndex((line, i) => i > start && line.startsWith('## '));
  const entries = [];
  let block = null;
  for (let i = start + 1; i < end; i++) {
    if (/^```/.test(lines[i])) {
      block = block === null ? { sh: lines[i] === '```sh', inClone: false } : null;
      continue;
    }
    if (block === null || !block.sh) continue;
    const text = lines[i].replace(/\s+#.*$/, '').trim();
    if (text === '' || text.startsWith('#')) continue;
    const commands = text.split('&&').map((command) => command.trim().split(/\s+/));
    if (commands[0][0] === 'git') block.inClone = true;
    entries.push({ line: i + 1, text, inClone: block.inClone, commands });
  }
  return entries;
}

/**
 * Runs one of README's install commands as README says, with what the tests cannot use put
 * aside: the global prefix and /usr/local/bin are `prefix`'s, GitHub is the clone, npm works
 * offline with a cache of its own.
 *
 * @param {string[]} words
 * @param {{cwd: string, clone: string, prefix: string}} where
 */
async function runInstallCommand(words, { cwd, clone, prefix }) {
  const pkg = require('../package.json');
  if (words[0] === 'git' || words[0] === 'cd') return;
  const args = words.slice(1).map((word) => {
    if (word === '/path/to/lila') return clone;
    if (word === `git+${repositoryUrl(pkg)}.git`) return `git+file://${clone}`;
    if (word.startsWith('/usr/local/bin/')) {
      fs.mkdirSync(path.join(prefix, 'bin'), { recursive: true });
      return path.join(prefix, 'bin', path.basename(word));
    }
    assert.ok(!path.isAbsolute(word), `an absolute path the test cannot write: ${word}`);
    return word;
  });
  // npm's settings from the environment (what `npm test` sets among them included) replaced.
  const env = Object.fromEntries(Object.entries(ENV).filter(([name]) => !/^npm_/i.test(name)));
  if (words[0] === 'npm') {
    Object.assign(env, {
      npm_config_cache: path.join(prefix, '.npm-cache'),
      npm_config_offline: 'true',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false'
    });
    if (args.includes('-g') || args.includes('--global')) env.npm_config_prefix = prefix;
  }
  const result = await run(words[0], args, { cwd, env });
  assert.equal(result.code, 0, `${words.join(' ')}:\n${result.stdout}${result.stderr}`);
}

/**
 * A copy of this tree as `git clone` would make it, with its uncommitted changes: the files git
 * tracks or would (ignored ones left out), committed in a repository of their own.
 *
 * @param {string} directory where, created
 * @returns {Promise<string>} directory
 */
async function cloneOfTree(directory) {
  const listed = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT });
  assert.equal(listed.code, 0, listed.stderr);
  for (const file of new Set(listed.stdout.split('\0').filter((name) => name !== ''))) {
    const from = path.join(ROOT, file);
    if (!fs.existsSync(from)) continue;
    fs.mkdirSync(path.dirname(path.join(directory, file)), { recursive: true });
    fs.copyFileSync(from, path.join(directory, file));
    fs.chmodSync(path.join(directory, file), fs.statSync(from).mode & 0o777);
  }
  const git = (...args) => run('git', ['-c', 'user.name=lila tests', '-c', 'user.email=tests@lila.invalid', ...args], { cwd: directory });
  for (const args of [['init', '-q'], ['add', '-A'], ['commit', '-q', '-m', 'a clone of the tree under test']]) {
    const result = await git(...args);
    assert.equal(result.code, 0, `git ${args.join(' ')}: ${result.stderr}`);
  }
  return directory;
}

/**
 * Starts `lila` (an installed or bundled executable) as round-robin in front of backends A and B
 * and checks that two requests go to A, then B.
 *
 * @param {string} lila
 * @param {{cwd: string}} options
 */
async function assertBalancesAcrossTwo(lila, options) {
  const a = await startHttpBackend('A');
  const b = await startHttpBackend('B');

  const proxy = await startExecutable(lila, ['round-robin', a.address, b.address, '-a', '127.0.0.1', '-p', '0'], options);

  assert.equal(proxy.mode, 'round-robin');
  assert.equal(proxy.count, 2);
  const bodies = [];
  for (let i = 0; i < 2; i++) bodies.push((await request(proxy.port, { agent: false })).body);
  assert.deepEqual(bodies, ['A', 'B']);
}

/**
 * Runs a command to its end; its cleanup kills it if it still runs.
 *
 * @param {string} command
 * @param {string[]} args
 * @param {{cwd?: string, env?: object}} [options]
 * @returns {Promise<{code: number | null, signal: string | null, stdout: string, stderr: string}>}
 */
async function run(command, args, options = {}) {
  const child = launch(command, args, options);
  const { code, signal } = await child.closed;
  return { code, signal, stdout: child.stdout, stderr: child.stderr };
}

/**
 * Starts an executable lila and resolves once it has printed its startup line on 127.0.0.1.
 *
 * @param {string} command
 * @param {string[]} args
 * @param {{cwd?: string}} [options]
 * @returns {Promise<{mode: string, port: number, count: number, stderr: string}>}
 */
async function startExecutable(command, args, options) {
  const child = launch(command, args, options);
  await new Promise((resolve, reject) => {
    const onData = () => {
      if (!STARTUP_LINE.test(child.stderr)) return;
      child.process.stderr.removeListener('data', onData);
      resolve();
    };
    child.process.stderr.on('data', onData);
    child.closed.then(({ code, signal }) => {
      reject(new Error(`${command} exited (code ${code}, signal ${signal}) before it was listening; stderr:\n${child.stderr}`));
    }, reject);
  });
  const [, mode, , port, count] = STARTUP_LINE.exec(child.stderr);
  return { mode, port: Number(port), count: Number(count), stderr: child.stderr };
}

function launch(command, args, options = {}) {
  const child = spawn(command, args, { cwd: options.cwd || os.tmpdir(), env: options.env || ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  const launched = { process: child, stdout: '', stderr: '', closed: null };
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (text) => { launched.stdout += text; });
  child.stderr.on('data', (text) => { launched.stderr += text; });
  launched.closed = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  onCleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return launched.closed.catch(() => {});
  });
  return launched;
}

// Dot files (editor swap files, .DS_Store) are never packed by npm.
function listFiles(directory, prefix) {
  const entries = fs.readdirSync(directory, { withFileTypes: true }).filter((entry) => !entry.name.startsWith('.'));
  return entries.flatMap((entry) => (entry.isDirectory()
    ? listFiles(path.join(directory, entry.name), `${prefix}/${entry.name}`)
    : [`${prefix}/${entry.name}`]));
}
