'use strict';

// packaging/systemd/lila.service: read as systemd reads it (systemd-analyze verify), its lila
// command lines run through `lila --check`, and its settings held to what README and lila say.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { DEFAULT_DRAIN_MS } = require('../lib/config/defaults');
const { validateDuration } = require('../lib/config/validate');
const { defaultStateDir } = require('../lib/acme/state-paths');
const { runLila, onCleanup, cleanup } = require('./helpers');

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

  function temporaryDirectory() {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-systemd-'));
    onCleanup(() => fs.rmSync(directory, { recursive: true, force: true }));
    return directory;
  }
});

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
