'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const fc = require('fast-check');
const { parseHostsFile } = require('../lib/config/hosts-file');
const { parseServer, isValidName } = require('../lib/balancing/server-address');
const { LilaError } = require('../lib/errors');
const validate = require('../lib/config/validate');
const { parseRateLimit, validateSize, parseSticky } = require('../lib/config/traffic-values');
const { hostsFile, serverSpec, optionText } = require('./generators');
const { check, runs, seed, withinTime } = require('./property-run');

const RUNS = { hostsFiles: 2000, servers: 3000, options: 3000 };
// Option validators, each with an option it reads and how to call it.
const VALIDATORS = [
  ['--port', (text) => validate.validatePort(text, '--port')],
  ['--timeout', (text) => validate.validateDuration(text, '--timeout')],
  ['--keep-alive-timeout', (text) => validate.validateDuration(text, '--keep-alive-timeout', { allowZero: true })],
  ['--max-fails', (text) => validate.validateCount(text, '--max-fails', 0)],
  ['--health-path', (text) => validate.validatePath(text, '--health-path')],
  ['--resolver', (text) => validate.validateResolvers(text, '--resolver')],
  ['--rate-limit', (text) => parseRateLimit(text, '--rate-limit')],
  ['--max-body-size', (text) => validateSize(text, '--max-body-size')],
  ['--sticky', (text) => parseSticky(text, '--sticky')]
];

describe(`hosts files, server strings and option values, as properties (seed ${seed()})`, () => {
  it(`a hosts file is read whole, or refused naming one of its lines in one line (${runs(RUNS.hostsFiles)} runs)`, () => {
    check(fc.property(hostsFile(), (text) => {
      const lines = text.split(/\r?\n/);
      let servers;
      try {
        servers = withinTime(() => parseHostsFile(text, 'hosts'));
      } catch (err) {
        assertOneLineError(err, 'LILA_ERR_HOSTS_FILE');
        const match = /^hosts:(\d+): /.exec(err.message);
        if (match === null) {
          assert.equal(err.message, 'hosts: no servers in the file');
          return;
        }
        const line = Number(match[1]);
        assert.ok(line >= 1 && line <= lines.length, `line ${line} of ${lines.length}`);
        assert.notEqual(lines[line - 1].replace(/#.*/, '').trim(), '', `line ${line} is blank or a comment`);
        return;
      }
      assert.ok(servers.length > 0);
      for (const server of servers) assertServer(server);
      assert.equal(new Set(servers.map((server) => server.name)).size, servers.length, 'a name twice');
    }), RUNS.hostsFiles);
  });

  it(`a server string is read, or refused in one line naming it (${runs(RUNS.servers)} runs)`, () => {
    check(fc.property(serverSpec(), (spec) => {
      let server;
      try {
        server = withinTime(() => parseServer(spec));
      } catch (err) {
        assertOneLineError(err, 'LILA_ERR_INVALID_SERVER');
        assert.ok(err.message.startsWith(`server "${shown(spec)}" `), err.message);
        return;
      }
      assertServer(server);
      // What it was read as reads back the same: its address as a name, written as lila writes it.
      if (server.srv === undefined && server.resolve !== true) {
        const again = parseServer(server.host.includes(':') ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`);
        assert.deepEqual([again.host, again.port], [server.host, server.port]);
      }
    }), RUNS.servers);
  });

  it(`an option's value is read, or refused in one line naming the option and the value (${runs(RUNS.options)} runs)`, () => {
    check(fc.property(fc.constantFrom(...VALIDATORS), optionText(), ([option, read], text) => {
      try {
        withinTime(() => read(text));
      } catch (err) {
        assertOneLineError(err, 'LILA_ERR_INVALID_OPTION');
        assert.ok(err.message.startsWith(`"${option}" `), err.message);
        assert.ok(err.message.endsWith(`received "${shown(text)}"`), err.message);
      }
    }), RUNS.options);
  });

  describe('fixed cases', () => {
    // A control byte in a server string or a hosts file line is shown escaped in lila's
    // one-line error: raw, a terminal shows it as nothing (NUL) or obeys it (ESC [2K erases
    // the line, and a CR in a --server argument returns to its start).
    const controls = [
      ['a NUL in a hosts file line', () => parseHostsFile('\x00\n', 'hosts'), 'LILA_ERR_HOSTS_FILE'],
      ['an ESC sequence in a server string', () => parseServer('a:1,\x1b[2K'), 'LILA_ERR_INVALID_SERVER'],
      ['a CR in a server string', () => parseServer('a:1,\rweight=1'), 'LILA_ERR_INVALID_SERVER'],
      ['an LF in a server string', () => parseServer('a:1\n'), 'LILA_ERR_INVALID_SERVER']
    ];
    for (const [name, read, code] of controls) {
      it(`escapes ${name} in its error`, () => {
        assert.throws(read, (err) => err.code === code && !/[\x00-\x1f\x7f]/.test(err.message));
      });
    }
  });
});

// A LilaError with that code and a message of one line (no stack, no control byte).
function assertOneLineError(err, code) {
  assert.ok(err instanceof LilaError, `${err && err.name}: ${err && err.message}`);
  assert.equal(err.code, code);
  assert.doesNotMatch(err.message, /[\x00-\x1f\x7f\u2028\u2029]/, JSON.stringify(err.message));
}

// A value as lila's errors show it: its control bytes escaped (LilaError).
function shown(text) {
  return new LilaError('', text).message;
}

function assertServer(server) {
  assert.equal(typeof server.host, 'string');
  assert.notEqual(server.host, '');
  assert.ok(isValidName(server.name) || server.srv !== undefined || /^[^\s,]+$/.test(server.name), `name ${JSON.stringify(server.name)}`);
  assert.ok(Number.isInteger(server.weight) && server.weight >= 0 && server.weight <= 1000);
  if (server.srv !== undefined) assert.equal(server.port, 0);
  else assert.ok(Number.isInteger(server.port) && server.port >= 1 && server.port <= 65535);
  if (net.isIP(server.host) === 0 && server.srv === undefined) assert.match(server.host, /^[A-Za-z0-9_.-]+$/);
}
