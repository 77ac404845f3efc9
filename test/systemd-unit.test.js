'use strict';

// packaging/systemd/lila.service: read as systemd reads it (systemd-analyze verify), its lila
// command lines run through `lila --check`, and its settings held to what README and lila say.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const http = require('node:http');
const https = require('node:https');
const net = require('node:net');
const { spawn, spawnSync } = require('node:child_process');
const { DEFAULT_DRAIN_MS } = require('../lib/config/defaults');
const { validateDuration } = require('../lib/config/validate');
const { defaultStateDir } = require('../lib/acme/state-paths');
const { hashPassword } = require('../lib/actions/password-hash');
const { runLila, onCleanup, cleanup, startHttpBackend, startTcpBackend, freePorts, request, untilWritten } = require('./helpers');
const { connectH2, fetchH2 } = require('./h2');
const { Pki } = require('./pki');
const { skipPeersOff } = require('./tools');

const ROOT = path.join(__dirname, '..');
const UNIT_FILE = path.join(ROOT, 'packaging', 'systemd', 'lila.service');
const LILA = path.join(ROOT, 'lila');
const CONFIG = '/etc/lila/lila.conf';
// The primary of --workers gives them this much past the drain timeout (lib/cluster/primary.js).
const WORKERS_GRACE_MS = 2000;
// Below this many open files lila warns at start (lib/service/service.js).
const LOW_OPEN_FILES = 4096;
const SAMPLE_CONFIG = `pool web round-robin 127.0.0.1:8001 127.0.0.1:8002
listen 80
  route * web
`;

const unit = readUnit(fs.readFileSync(UNIT_FILE, 'utf8'));
const service = unit.Service;

describe('systemd unit (packaging/systemd/lila.service)', () => {
  afterEach(cleanup);

  it('runs lila with /etc/lila/lila.conf, and a reload checks the file, then sends SIGHUP', () => {
    const start = execArgs(one('ExecStart'));
    assert.equal(start[0], '/usr/bin/lila');
    assert.equal(start[start.indexOf('--config') + 1], CONFIG);
    assert.deepEqual(service.ExecReload.map(execArgs), [
      [start[0], '--check', ...start.slice(1)],
      ['/bin/kill', '-HUP', '$MAINPID']
    ]);
    assert.equal(one('Type'), 'exec');
    assert.equal(one('Restart'), 'on-failure');
    assert.deepEqual(unit.Install.WantedBy, ['multi-user.target']);
  });

  it('stops with a SIGTERM to lila alone, and waits longer than its drain', () => {
    assert.equal(service.KillSignal === undefined ? 'SIGTERM' : one('KillSignal'), 'SIGTERM');
    // Not control-group: --workers would get systemd's SIGTERM and their primary's, and stop at once.
    assert.equal(one('KillMode'), 'mixed');
    const start = execArgs(one('ExecStart'));
    const given = start.indexOf('--drain-timeout');
    const drain = given === -1 ? DEFAULT_DRAIN_MS : validateDuration(start[given + 1], '--drain-timeout', { allowZero: true });
    assert.ok(seconds(one('TimeoutStopSec')) * 1000 > drain + WORKERS_GRACE_MS, `TimeoutStopSec=${one('TimeoutStopSec')}`);
  });

  it('runs as a user of its own that binds ports below 1024, with --acme\'s state in /var/lib/lila', () => {
    assert.equal(one('DynamicUser'), 'yes');
    assert.equal(one('User'), 'lila');
    assert.equal(one('AmbientCapabilities'), 'CAP_NET_BIND_SERVICE');
    assert.equal(one('CapabilityBoundingSet'), 'CAP_NET_BIND_SERVICE');
    assert.equal(one('StateDirectory'), 'lila');
    // %S is /var/lib for a system service: lila's default --state-dir is then StateDirectory's.
    assert.deepEqual(service.Environment, ['XDG_DATA_HOME=%S']);
    assert.equal(defaultStateDir({ XDG_DATA_HOME: '/var/lib' }, '/'), '/var/lib/lila');
    assert.ok(Number(one('LimitNOFILE')) >= LOW_OPEN_FILES, `LimitNOFILE=${one('LimitNOFILE')}`);
  });

  it('is sandboxed, but lets V8 make compiled code executable', () => {
    const expected = {
      ProtectSystem: 'strict',
      ProtectHome: 'yes',
      PrivateTmp: 'yes',
      PrivateDevices: 'yes',
      NoNewPrivileges: 'yes',
      ProtectKernelTunables: 'yes',
      ProtectKernelModules: 'yes',
      ProtectControlGroups: 'yes',
      RestrictSUIDSGID: 'yes',
      LockPersonality: 'yes'
    };
    for (const [key, value] of Object.entries(expected)) assert.equal(one(key), value, key);
    const families = one('RestrictAddressFamilies').split(/\s+/);
    for (const family of ['AF_INET', 'AF_INET6', 'AF_UNIX']) assert.ok(families.includes(family), family);
    // V8 compiles into memory it then makes executable: node aborts at start under it.
    assert.equal(service.MemoryDenyWriteExecute, undefined);
  });

  it('is a unit systemd reads without a complaint (systemd-analyze verify)', function () {
    const probe = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
    if (probe.error && probe.error.code === 'ENOENT') {
      if (process.env.LILA_REQUIRE_SYSTEMD_ANALYZE === '1') {
        assert.fail('LILA_REQUIRE_SYSTEMD_ANALYZE=1 but systemd-analyze was not found; install it (apt-get install systemd)');
      }
      this.skip();
    }
    // verify checks that every Exec command exists: the copy runs this tree's lila instead.
    const directory = temporaryDirectory();
    const copy = path.join(directory, 'lila.service');
    fs.writeFileSync(copy, fs.readFileSync(UNIT_FILE, 'utf8').replaceAll('/usr/bin/lila', LILA));

    const result = spawnSync('systemd-analyze', ['verify', '--man=no', copy], { encoding: 'utf8' });

    assert.equal(`${result.stdout}${result.stderr}`, '');
    assert.equal(result.status, 0);
  });

  it('filters system calls to a service\'s, with V8\'s memory keys, without @privileged and @resources, EPERM for the others', () => {
    assert.deepEqual(service.SystemCallFilter, ['@system-service @pkey', '~@privileged @resources']);
    assert.equal(one('SystemCallErrorNumber'), 'EPERM');
    assert.equal(one('PrivateMounts'), 'yes');
  });

  it('lets lila make every system call it makes serving: lila under strace -f, none outside SystemCallFilter=', async function () {
    skipPeersOff(this, 'strace');
    this.timeout(180000);
    const missing = ['strace', 'systemd-analyze'].filter((tool) => {
      const probe = spawnSync(tool, ['--version'], { encoding: 'utf8' });
      return probe.error !== undefined || probe.status !== 0;
    });
    if (missing.length > 0) {
      if (process.env.LILA_REQUIRE_STRACE === '1') assert.fail(`LILA_REQUIRE_STRACE=1 but ${missing.join(' and ')} cannot run; install it (apt-get install strace systemd)`);
      this.skip();
    }
    const allowed = filterOf(service.SystemCallFilter, syscallSets());
    assert.ok(allowed.has('epoll_pwait') && !allowed.has('setuid') && !allowed.has('mount'), 'the sets are read');

    const calls = await straceServing(temporaryDirectory(), temporaryDirectory());

    // It served (accept4), followed its file (inotify_add_watch), ran and reaped its workers (execve, wait4).
    for (const call of ['accept4', 'inotify_add_watch', 'execve', 'wait4']) assert.ok(calls.includes(call), `${call} in ${calls.join(' ')}`);
    assert.deepEqual(calls.filter((call) => !allowed.has(call)), []);
  });

  it('gives lila options it accepts: lila --check with ExecStart\'s and ExecReload\'s', async () => {
    const directory = temporaryDirectory();
    const config = path.join(directory, 'etc', 'lila', 'lila.conf');
    fs.mkdirSync(path.dirname(config), { recursive: true });
    fs.writeFileSync(config, SAMPLE_CONFIG);
    const start = execArgs(one('ExecStart')).slice(1);
    const reloadCheck = execArgs(service.ExecReload[0]).slice(1);

    for (const args of [['--check', ...start], reloadCheck]) {
      const result = await runLila(args.map((arg) => (arg === CONFIG ? config : arg)), { cwd: directory });
      assert.equal(result.stderr, '', args.join(' '));
      assert.match(result.stdout, /: good\n$/, args.join(' '));
      assert.equal(result.code, 0);
    }
  });

  it('is installed by README where systemd reads it, with the config file where ExecStart names it', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n### Running lila as a service\n'));
    assert.match(section, /^sudo install -D -m 644 packaging\/systemd\/lila\.service \/etc\/systemd\/system\/lila\.service$/m);
    assert.match(section, new RegExp(`^sudo install -D -m 644 lila\\.conf ${CONFIG.replaceAll('.', '\\.')}$`, 'm'));
    assert.match(section, /^sudo systemctl reload lila /m);
  });

  // The one value of a key of [Service].
  function one(key) {
    assert.equal((service[key] || []).length, 1, `[Service] ${key}= is given once`);
    return service[key][0];
  }

});

function temporaryDirectory() {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-systemd-'));
  onCleanup(() => fs.rmSync(directory, { recursive: true, force: true }));
  return directory;
}

/**
 * Runs lila (the executable) under `strace -f -c` as a service runs it, until it has served all
 * a service does: HTTPS with HTTP/1.1 and h2, a tcp listener, --workers 2 (fork, the primary's
 * messages), health checks, a name looked up in DNS, --basic-auth (its hash checked in a worker
 * thread), the admin API (status, metrics, the dashboard and its events), a handshake refused,
 * a --watch reload, a SIGHUP reload, then SIGTERM's drain and exit.
 *
 * @param {string} directory the config file's, which --watch follows
 * @param {string} traceDirectory where strace writes (not followed: its writes are no change)
 * @returns {Promise<string[]>} the system calls made, by every process and thread
 */
async function straceServing(directory, traceDirectory) {
  const pki = new Pki();
  onCleanup(() => pki.remove());
  const site = pki.issue({ names: ['lila.test', 'localhost'], ips: ['127.0.0.1'] });
  const web = await startHttpBackend('WEB');
  const pg = await startTcpBackend('TCP');
  const [secure, tcp, admin] = await freePorts(3);
  const users = path.join(directory, 'users');
  fs.writeFileSync(users, `ops:${await hashPassword('secret')}\n`);
  const config = path.join(directory, 'lila.conf');
  const text = [
    `--admin 127.0.0.1:${admin}`,
    '--workers 2',
    '--watch',
    '--access-log',
    `pool web round-robin ${web.address} --health-check --health-interval 100ms`,
    `pool named round-robin localhost:${web.port},resolve`,
    `pool pg least-connections ${pg.address} --layer tcp`,
    `listen 127.0.0.1:${secure} --tls-cert ${site.certFile} --tls-key ${site.keyFile}`,
    `  route named.test named`,
    `  route /private web --basic-auth ${users}`,
    '  route * web',
    `listen 127.0.0.1:${tcp} --layer tcp`,
    '  route * pg',
    ''
  ].join('\n');
  fs.writeFileSync(config, text);
  const trace = path.join(traceDirectory, 'trace.txt');
  const child = spawn('strace', ['-f', '-qq', '-c', '-o', trace, process.execPath, LILA, '--config', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  const lila = { child, stderr: '', closed: null };
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => { lila.stderr += chunk; });
  lila.closed = new Promise((resolve) => child.once('close', resolve));
  onCleanup(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
    return lila.closed;
  });
  const written = (pattern, what, count = 1) => untilWritten(lila, () => ((lila.stderr.match(pattern) || []).length >= count ? true : null), what, 60000);
  await written(/listening on \S+: \d+ routes? -> .*\n/g, 'both listeners listening', 2);
  const [pid] = fs.readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);

  const tls = { ca: pki.ca, servername: 'lila.test', rejectUnauthorized: true };
  const get = (target, headers = {}) => new Promise((resolve, reject) => {
    https.get({ host: '127.0.0.1', port: secure, path: target, agent: false, headers: { host: 'lila.test', ...headers }, ...tls }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    }).on('error', reject);
  });
  assert.equal(await get('/'), 200);
  assert.equal(await get('/private', { authorization: `Basic ${Buffer.from('ops:secret').toString('base64')}` }), 200);
  await get('/', { host: 'named.test' });
  const session = await connectH2(`https://127.0.0.1:${secure}`, tls);
  assert.equal((await fetchH2(session, { ':authority': 'lila.test' })).status, 200);
  session.close();
  assert.equal(await exchange(tcp, ''), 'TCP');
  await exchange(secure, 'GET / HTTP/1.1\r\nHost: lila.test\r\n\r\n');
  for (const target of ['/status', '/metrics', '/']) assert.equal((await request(admin, { agent: false, path: target })).status, 200);
  await firstEvent(admin);

  fs.writeFileSync(config, `${text}# changed\n`);
  await written(/reloaded .*lila\.conf/g, 'the --watch reload');
  process.kill(pid, 'SIGHUP');
  await written(/reloaded .*lila\.conf/g, 'the SIGHUP reload', 2);
  process.kill(pid, 'SIGTERM');
  await lila.closed;
  return fs.readFileSync(trace, 'utf8').split('\n')
    .map((line) => line.trim().split(/\s+/).at(-1))
    .filter((name) => /^[a-z0-9_]+$/.test(name) && name !== 'total' && name !== 'syscall');
}

// What a tcp connection to lila gets back for `bytes` (sent, then its end), as text.
function exchange(port, bytes) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes));
    let text = '';
    socket.on('data', (chunk) => { text += chunk; });
    socket.on('error', () => {});
    socket.on('close', () => resolve(text));
  });
}

// Opens the dashboard's events and resolves with their first chunk, closing them.
function firstEvent(port) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/events', agent: false }, (res) => {
      res.once('data', (chunk) => {
        req.destroy();
        resolve(String(chunk));
      });
    });
    req.on('error', (err) => (err.code === 'ECONNRESET' ? undefined : reject(err)));
  });
}

/**
 * systemd's sets of system calls, as `systemd-analyze syscall-filter` lists them, each with its
 * members: names, and the sets it includes.
 *
 * @returns {Map<string, string[]>}
 */
function syscallSets() {
  const result = spawnSync('systemd-analyze', ['syscall-filter'], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  const sets = new Map();
  let members = null;
  for (const raw of result.stdout.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (line === '') continue;
    if (!/^\s/.test(raw)) sets.set(line, members = []);
    else members.push(line);
  }
  return sets;
}

/**
 * The system calls a unit's `SystemCallFilter=` lines allow, read as systemd reads them: the
 * first line an allow list, `~` lines taken out of it, sets expanded.
 *
 * @param {string[]} lines
 * @param {Map<string, string[]>} sets
 * @returns {Set<string>}
 */
function filterOf(lines, sets) {
  const expand = (name) => (name.startsWith('@') ? (sets.get(name) || assert.fail(`unknown set ${name}`)).flatMap(expand) : [name]);
  const allowed = new Set();
  for (const line of lines) {
    const deny = line.startsWith('~');
    for (const name of line.replace(/^~/, '').split(/\s+/).flatMap(expand)) {
      if (deny) allowed.delete(name);
      else allowed.add(name);
    }
  }
  return allowed;
}

/**
 * A unit file's sections, each key with its values in file order (`ExecReload=` may repeat).
 *
 * @param {string} text
 * @returns {Record<string, Record<string, string[]>>}
 */
function readUnit(text) {
  const sections = {};
  let section = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(\w+)\]$/.exec(line);
    if (header !== null) {
      section = sections[header[1]] = {};
      continue;
    }
    const pair = /^(\w+)=(.*)$/.exec(line);
    assert.ok(pair !== null && section !== null, `not a unit file line: ${raw}`);
    (section[pair[1]] ||= []).push(pair[2].trim());
  }
  return sections;
}

// An Exec line's words (the unit quotes none).
function execArgs(line) {
  assert.doesNotMatch(line, /["'\\]/, 'an Exec line without quotes or escapes');
  return line.split(/\s+/);
}

// A systemd time span in seconds: "30s", "1min 30s", "90".
function seconds(text) {
  const units = { ms: 0.001, s: 1, sec: 1, m: 60, min: 60, h: 3600 };
  let total = 0;
  for (const part of text.trim().split(/\s+/)) {
    const match = /^([0-9.]+)([a-z]*)$/.exec(part);
    assert.ok(match !== null && (match[2] === '' || units[match[2]] !== undefined), `a time span: ${text}`);
    total += Number(match[1]) * (match[2] === '' ? 1 : units[match[2]]);
  }
  return total;
}
