'use strict';

const assert = require('node:assert/strict');
const { execFileSync, execFile } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { promisify } = require('node:util');
const { resolveFile, resolveFileSync, realRootSync, inspect, within } = require('../lib/files/resolve');
const { openFile } = require('../lib/files/open');
const { directoryEntries } = require('../lib/files/entries');
const { cleanup, onCleanup } = require('./helpers');

const UNICODE_NAME = 'ünï cødé.txt';

const { ATTACKS } = require('./fixtures/traversal-attacks');

// Whether users other than the owner may reach a file: every directory above it searchable, the file's `mode` bit set.
function othersMay(file, mode) {
  const real = fs.realpathSync(file);
  const above = [];
  for (let dir = path.dirname(real); dir !== path.dirname(dir); dir = path.dirname(dir)) above.push(dir);
  return (fs.statSync(real).mode & mode) !== 0 && above.every((dir) => (fs.statSync(dir).mode & 0o001) !== 0);
}

// Symbolic links by name: what each points to.
function makeLinks(dir, links) {
  for (const [name, target] of Object.entries(links)) fs.symlinkSync(target, path.join(dir, name));
}

describe('files: resolveFile', () => {
  let base;
  let root;

  before(() => {
    base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'lila-files-')));
    root = path.join(base, 'www');
    const files = {
      'index.html': '<h1>home</h1>',
      'a.txt': 'A',
      [UNICODE_NAME]: 'unicode',
      '%2e%2e-literal': 'literal',
      'sub/index.html': 'sub index',
      'sub/page.html': 'page',
      'sub/.hidden': 'hidden',
      'docs/index.htm': 'htm index',
      '.env': 'SECRET=1',
      '.git/config': '[core]',
      '.well-known/security.txt': 'Contact: x',
      '.well-known/.secret': 'secret'
    };
    for (const [name, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
      fs.writeFileSync(path.join(root, name), text);
    }
    fs.mkdirSync(path.join(root, 'empty'));
    fs.mkdirSync(path.join(base, 'www-evil'));
    fs.writeFileSync(path.join(base, 'www-evil', 'secret.txt'), 'evil');
    fs.writeFileSync(path.join(base, 'secret.txt'), 'outside');
    makeLinks(root, {
      'link-in': 'a.txt', 'dirlink-in': 'sub', etc: '/etc', passwd: '/etc/passwd', up: '..', evil: '../www-evil/secret.txt', loop: 'loop'
    });
    makeLinks(base, { current: 'www' });
    execFileSync('mkfifo', [path.join(root, 'fifo')]);
  });

  after(() => fs.rmSync(base, { recursive: true, force: true }));
  afterEach(cleanup);

  it(`refuses every path of the attack list (${ATTACKS.length}), with 400 or 404, and serves none of them`, async () => {
    const wrong = [];
    for (const [attack, status] of ATTACKS) {
      const found = await resolveFile(root, attack);
      const answered = found.kind === 'refused' ? found.status : found.kind === 'missing' ? 404 : found.kind;
      if (answered !== status) wrong.push(`${attack}: ${answered} (${found.why || found.file || found.dir}), not ${status}`);
    }

    assert.ok(ATTACKS.length >= 40);
    assert.deepEqual(wrong, []);
  });

  it('answers on the calling thread (resolveFileSync) as it does through the threadpool', async () => {
    const served = ['/', '/a.txt', '/link-in', '/dirlink-in/', '/sub', '/sub/', '/empty/', '/.well-known/security.txt', '/nope', '/fifo'];
    const answer = ({ stat, ...rest }) => ({ ...rest, ino: stat && stat.ino });
    for (const p of [...ATTACKS.map(([attack]) => attack), ...served]) {
      assert.deepEqual(answer(resolveFileSync(root, p)), answer(await resolveFile(root, p)), p);
    }
    assert.equal(resolveFileSync(path.join(base, 'current'), '/sub/', { index: ['page.html'] }).file, path.join(root, 'sub', 'page.html'));
    assert.deepEqual(resolveFileSync(path.join(base, 'gone'), '/'), { kind: 'missing' });
  });

  it('says why: a dot segment, an encoded slash, a backslash, NUL, bytes that are no UTF-8, a hidden name, a link out', async () => {
    const why = async (p) => (await resolveFile(root, p)).why;

    assert.equal(await why('/%2e%2e/x'), 'a "." or ".." segment');
    assert.equal(await why('/a%2fb'), 'a "/" encoded in a segment (%2F)');
    assert.equal(await why('/a%5cb'), 'a backslash');
    assert.equal(await why('/a%00'), 'a control character');
    assert.equal(await why('/%c0%ae'), 'bytes that are no UTF-8');
    assert.equal(await why('/%zz'), 'a "%" not followed by two hex digits');
    assert.equal(await why('/.env'), 'a dotfile or dot-directory');
    assert.equal(await why('/etc/passwd'), 'a symbolic link out of the root');
    assert.equal(await why('/fifo'), 'neither a regular file nor a directory');
  });

  it('refuses with 400 before 404: a hidden name and a dot segment in one path is a 400', async () => {
    assert.deepEqual(await resolveFile(root, '/.git/../x'), { kind: 'refused', status: 400, why: 'a "." or ".." segment' });
  });

  it('serves a file, its real path to open and its path as asked', async () => {
    const found = await resolveFile(root, '/a.txt');

    assert.equal(found.kind, 'file');
    assert.equal(found.file, path.join(root, 'a.txt'));
    assert.equal(found.path, path.join(root, 'a.txt'));
    assert.equal(found.stat.size, 1);
    assert.equal(found.realRoot, root);
    assert.equal(found.index, undefined);
  });

  it('follows a link inside the root: the real path to open, the name asked for the type', async () => {
    const found = await resolveFile(root, '/link-in');

    assert.equal(found.kind, 'file');
    assert.equal(found.file, path.join(root, 'a.txt'));
    assert.equal(found.path, path.join(root, 'link-in'));
    const index = await resolveFile(root, '/dirlink-in/');
    assert.equal(index.file, path.join(root, 'sub', 'index.html'));
    assert.equal(index.index, true);
    // A link in the middle of the path, in the root and out of it, on either thread.
    for (const resolve of [resolveFile, resolveFileSync]) {
      const inner = await resolve(root, '/dirlink-in/page.html');
      assert.equal(inner.file, path.join(root, 'sub', 'page.html'));
      assert.equal(inner.path, path.join(root, 'dirlink-in', 'page.html'));
      assert.deepEqual(await resolve(root, '/up/secret.txt'), { kind: 'refused', status: 404, why: 'a symbolic link out of the root' });
    }
  });

  it('decodes once, strict UTF-8, from percent-encoding or raw bytes (read as latin1)', async () => {
    const encoded = await resolveFile(root, `/${encodeURIComponent(UNICODE_NAME)}`);
    const raw = await resolveFile(root, Buffer.from(`/${UNICODE_NAME}`, 'utf8').toString('latin1'));
    const literal = await resolveFile(root, '/%252e%252e-literal');

    assert.equal(encoded.file, path.join(root, UNICODE_NAME));
    assert.equal(raw.file, path.join(root, UNICODE_NAME));
    assert.equal(literal.file, path.join(root, '%2e%2e-literal'));
  });

  it('merges empty segments, as nginx does', async () => {
    assert.equal((await resolveFile(root, '//sub///page.html')).file, path.join(root, 'sub', 'page.html'));
  });

  it('serves /.well-known/ though its name starts with a dot', async () => {
    const found = await resolveFile(root, '/.well-known/security.txt');

    assert.equal(found.kind, 'file');
    assert.equal(found.file, path.join(root, '.well-known', 'security.txt'));
  });

  it('answers a directory: without its slash, to redirect; with it, its index, or itself when it has none', async () => {
    const bare = await resolveFile(root, '/sub');
    const index = await resolveFile(root, '/sub/');
    const rootIndex = await resolveFile(root, '/');
    const empty = await resolveFile(root, '/empty/');

    assert.deepEqual([bare.kind, bare.slash, bare.dir, bare.path], ['directory', false, path.join(root, 'sub'), path.join(root, 'sub')]);
    assert.deepEqual([index.kind, index.index, index.file], ['file', true, path.join(root, 'sub', 'index.html')]);
    assert.deepEqual([rootIndex.kind, rootIndex.file], ['file', path.join(root, 'index.html')]);
    assert.deepEqual([empty.kind, empty.slash, empty.dir], ['directory', true, path.join(root, 'empty')]);
    assert.ok(empty.stat.isDirectory());
  });

  it('tries the index names in order', async () => {
    const index = ['index.html', 'index.htm'];

    assert.equal((await resolveFile(root, '/docs/', { index })).file, path.join(root, 'docs', 'index.htm'));
    assert.equal((await resolveFile(root, '/sub/', { index: ['page.html', 'index.html'] })).file, path.join(root, 'sub', 'page.html'));
    assert.equal((await resolveFile(root, '/docs/')).kind, 'directory');
    assert.equal((await resolveFile(root, '/sub/', { index: [] })).kind, 'directory');
    assert.equal((await resolveFile(root, '/sub/', { index: ['../a.txt'] })).kind, 'directory');
  });

  it('answers missing files and directories, under missing directories and under files', async () => {
    for (const p of ['/nope', '/nope/', '/nope/x', '/a.txt/x', `/${'x'.repeat(300)}`]) {
      assert.deepEqual(await resolveFile(root, p), { kind: 'missing' }, p);
    }
  });

  it('refuses a unix socket with 404, as it refuses a FIFO', async () => {
    const server = net.createServer();
    const socketPath = path.join(root, 'socket');
    await new Promise((resolve) => server.listen(socketPath, resolve));
    onCleanup(() => new Promise((resolve) => server.close(resolve)));

    assert.deepEqual(await resolveFile(root, '/socket'), { kind: 'refused', status: 404, why: 'neither a regular file nor a directory' });
    assert.equal((await resolveFile(root, '/fifo')).status, 404);
  });

  it('follows a root that is a link (a deploy\'s current) on every call, or takes the real root it is given', async () => {
    const current = path.join(base, 'current');
    const found = await resolveFile(current, '/sub/page.html');
    const given = await resolveFile(current, '/a.txt', { realRoot: root });
    const wrongRealRoot = await resolveFile(current, '/a.txt', { realRoot: path.join(base, 'www-evil') });

    assert.equal(found.file, path.join(root, 'sub', 'page.html'));
    assert.equal(found.path, path.join(current, 'sub', 'page.html'));
    assert.equal(found.realRoot, root);
    assert.equal(given.file, path.join(root, 'a.txt'));
    assert.equal(wrongRealRoot.status, 404);
  });

  it('reads the root\'s real path only at a link below it with lazyRealRoot, and answers as without it', async () => {
    const lazy = { lazyRealRoot: true };
    const served = ['/', '/a.txt', '/link-in', '/dirlink-in/', '/dirlink-in/page.html', '/up/secret.txt', '/evil', '/etc/passwd', '/loop',
      '/sub', '/sub/', '/sub/page.html', '/empty/', '/.well-known/security.txt', '/nope', '/nope/x', '/a.txt/x', '/fifo'];
    const answer = ({ stat, file, dir, realRoot, ...rest }) => ({ ...rest, ino: stat && stat.ino });
    const paths = ({ file, dir, realRoot }) => ({ file, dir, realRoot });
    for (const p of [...ATTACKS.map(([attack]) => attack), ...served]) {
      const found = await resolveFile(root, p, lazy);
      assert.deepEqual(answer(found), answer(await resolveFile(root, p)), p);
      assert.deepEqual(answer(resolveFileSync(root, p, lazy)), answer(found), p);
      // Without a link below the root, the path as asked; at one, the real path and the real root, as without lazyRealRoot.
      if (found.realRoot === null) assert.equal(found.file || found.dir, found.path, p);
      else if (found.realRoot !== undefined) assert.deepEqual(paths(found), paths(await resolveFile(root, p)), p);
    }
    assert.equal((await resolveFile(root, '/a.txt', lazy)).realRoot, null);
    assert.equal((await resolveFile(root, '/link-in', lazy)).realRoot, root);
    assert.deepEqual(await resolveFile(path.join(base, 'gone'), '/a.txt', lazy), { kind: 'missing' });
    assert.equal(realRootSync(path.join(base, 'current')), root);
    assert.equal(realRootSync(path.join(base, 'gone')), null);
  });

  it('follows a root link switched by a deploy at the next call with lazyRealRoot', async () => {
    const release = path.join(base, 'release');
    fs.symlinkSync('www', release);
    onCleanup(() => fs.rmSync(release, { force: true }));
    const before = resolveFileSync(release, '/a.txt', { lazyRealRoot: true });
    fs.rmSync(release);
    fs.symlinkSync('www-evil', release);
    const after = resolveFileSync(release, '/secret.txt', { lazyRealRoot: true });

    assert.equal(before.file, path.join(release, 'a.txt'));
    assert.equal(before.stat.ino, fs.statSync(path.join(root, 'a.txt')).ino);
    assert.deepEqual(resolveFileSync(release, '/a.txt', { lazyRealRoot: true }), { kind: 'missing' });
    assert.equal(after.stat.ino, fs.statSync(path.join(base, 'www-evil', 'secret.txt')).ino);
  });

  it('answers missing when the root itself is gone (a deploy between two releases)', async () => {
    assert.deepEqual(await resolveFile(path.join(base, 'gone'), '/a.txt'), { kind: 'missing' });
    assert.deepEqual(await resolveFile(path.join(base, 'gone'), '/'), { kind: 'missing' });
  });

  it('refuses on Windows what Windows reads as another name: ":", a trailing dot or space, a device', async () => {
    const windows = { windows: true };
    for (const p of ['/c:/windows/win.ini', '/index.html::$DATA', '/index.html.', '/index.html%20', '/con', '/AUX.txt', '/sub/nul', '/com1', '/LPT9.log']) {
      assert.deepEqual(await resolveFile(root, p, windows), { kind: 'refused', status: 404, why: 'a name Windows reads as another (":", a trailing "." or space, a device)' }, p);
    }
    assert.equal((await resolveFile(root, '/console.txt', windows)).kind, 'missing');
    assert.equal((await resolveFile(root, '/a.txt', windows)).kind, 'file');
  });

  it('answers 403 for a directory it may not enter', async function () {
    const resolveModule = path.join(__dirname, '..', 'lib', 'files', 'resolve.js');
    // Root reads any directory: the check runs as nobody then, if nobody may run this node and read lila.
    if (process.getuid() === 0 && ![[process.execPath, 0o001], [resolveModule, 0o004], [path.dirname(base), 0o001]].every(([file, mode]) => othersMay(file, mode))) {
      this.skip('run as root, with a node, a checkout or a temporary directory that user nobody may not reach');
    }
    const locked = path.join(base, 'locked');
    fs.mkdirSync(path.join(locked, 'www', 'closed'), { recursive: true });
    fs.writeFileSync(path.join(locked, 'www', 'closed', 'x.txt'), 'x');
    fs.chmodSync(path.join(locked, 'www', 'closed'), 0o000);
    onCleanup(() => fs.chmodSync(path.join(locked, 'www', 'closed'), 0o755));
    const script = `require(${JSON.stringify(resolveModule)})` +
      `.resolveFile(${JSON.stringify(path.join(locked, 'www'))}, '/closed/x.txt').then((r) => process.stdout.write(JSON.stringify(r)))`;
    const asNobody = process.getuid() === 0 ? { uid: 65534, gid: 65534 } : {};
    if (process.getuid() === 0) {
      fs.chmodSync(base, 0o755);
      fs.chmodSync(locked, 0o755);
    }
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { ...asNobody, cwd: '/' });

    assert.deepEqual(JSON.parse(stdout), { kind: 'refused', status: 403, why: 'permission denied' });
  });
});

describe('files: inspect and within', () => {
  it('keeps a sibling whose name starts with the root\'s out of it', () => {
    assert.equal(within('/srv/www/a', '/srv/www'), true);
    assert.equal(within('/srv/www', '/srv/www'), true);
    assert.equal(within('/srv/www-evil/a', '/srv/www'), false);
    assert.equal(within('/srv', '/srv/www'), false);
    assert.equal(within('/etc/passwd', '/'), true);
  });

  it('rejects on an error it does not expect, rather than answering for it', async () => {
    await assert.rejects(inspect('/etc/passwd\0', '/'), { code: 'ERR_INVALID_ARG_VALUE' });
  });
});

describe('files: openFile', () => {
  let root;

  beforeEach(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'lila-open-')));
    onCleanup(() => fs.rmSync(root, { recursive: true, force: true }));
    fs.writeFileSync(path.join(root, 'a.txt'), 'first');
    fs.writeFileSync(path.join(root, 'b.txt'), 'other');
  });

  afterEach(cleanup);

  async function opened(found) {
    const result = await openFile(found);
    if (result !== null) onCleanup(() => result.handle.close());
    return result;
  }

  it('opens the file checked, with its stat as it is now', async () => {
    const found = await resolveFile(root, '/a.txt');
    fs.writeFileSync(path.join(root, 'a.txt'), 'changed in place');
    const result = await opened(found);

    assert.equal(result.stat.size, 'changed in place'.length);
    assert.equal((await result.handle.readFile('utf8')), 'changed in place');
  });

  it('opens nothing when the file was removed, replaced, or made a link out of the root since', async () => {
    const file = path.join(root, 'a.txt');
    const found = await resolveFile(root, '/a.txt');

    fs.unlinkSync(file);
    assert.equal(await opened(found), null);
    fs.renameSync(path.join(root, 'b.txt'), file);
    assert.equal(await opened(found), null);
    fs.unlinkSync(file);
    fs.symlinkSync('/etc/passwd', file);
    assert.equal(await opened(found), null);
  });

  it('opens nothing, and does not wait, when a FIFO was put in the file\'s place', async () => {
    const file = path.join(root, 'a.txt');
    const found = await resolveFile(root, '/a.txt');
    fs.unlinkSync(file);
    execFileSync('mkfifo', [file]);

    assert.equal(await opened(found), null);
  });
});

describe('files: directoryEntries', () => {
  let root;

  before(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'lila-entries-')));
    for (const name of ['a.txt', 'b.html', '.env', 'back\\slash', 'line\nbreak', UNICODE_NAME]) fs.writeFileSync(path.join(root, name), name);
    fs.mkdirSync(path.join(root, 'dir'));
    fs.mkdirSync(path.join(root, '.git'));
    fs.mkdirSync(path.join(root, '.well-known'));
    makeLinks(root, { 'link-in': 'a.txt', dirlink: 'dir', etc: '/etc', passwd: '/etc/passwd', dangling: 'nowhere' });
    execFileSync('mkfifo', [path.join(root, 'fifo')]);
    fs.writeFileSync(Buffer.concat([Buffer.from(`${root}/`), Buffer.from('6e6f2dff2e747874', 'hex')]), 'not UTF-8');
  });

  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('lists what a request could fetch by name, nothing hidden, nothing out of the root, no FIFO', async () => {
    const entries = await directoryEntries(root, root);
    const byName = Object.fromEntries(entries.map((entry) => [entry.name, entry]));

    assert.deepEqual(Object.keys(byName).sort(), ['a.txt', 'b.html', 'dir', 'dirlink', 'link-in', UNICODE_NAME].sort());
    assert.deepEqual(byName['a.txt'].directory, false);
    assert.equal(byName['a.txt'].size, 5);
    assert.equal(byName.dir.directory, true);
    assert.equal(byName.dirlink.directory, true);
    assert.equal(byName['link-in'].size, 5);
    assert.equal(typeof byName['b.html'].mtimeMs, 'number');
  });

  it('leaves out on Windows the names Windows reads as others', async () => {
    fs.writeFileSync(path.join(root, 'a:b'), 'colon');
    onCleanup(() => fs.unlinkSync(path.join(root, 'a:b')));

    assert.ok((await directoryEntries(root, root)).some((entry) => entry.name === 'a:b'));
    assert.ok(!(await directoryEntries(root, root, { windows: true })).some((entry) => entry.name === 'a:b'));
    await cleanup();
  });
});
