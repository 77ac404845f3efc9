'use strict';

const assert = require('node:assert/strict');
const { parseRateLimit, validateSize, parseSticky } = require('../lib/config/traffic-values');
const { parseServer } = require('../lib/balancing/server-address');
const { parseHostsFile } = require('../lib/config/hosts-file');
const { createProxy } = require('../lib');
const { cleanup, runLila } = require('./helpers');

describe('traffic control options', () => {
  afterEach(cleanup);

  describe('--rate-limit', () => {
    const valid = [
      ['100/s', { rate: 100, per: 1000, burst: 100 }],
      ['20/m', { rate: 20, per: 60000, burst: 20 }],
      ['5/s,burst=50', { rate: 5, per: 1000, burst: 50 }],
      ['1/m,burst=1', { rate: 1, per: 60000, burst: 1 }]
    ];
    for (const [text, expected] of valid) {
      it(`reads ${text}`, () => assert.deepEqual(parseRateLimit(text, '--rate-limit'), expected));
    }
    for (const text of ['', '100', '0/s', '10/h', '10/s,burst=0', '10/s,burst=', '-1/s', '10 /s', '10/s,bursts=3']) {
      it(`refuses "${text}", naming the option`, () => {
        assert.throws(() => parseRateLimit(text, '--rate-limit'), {
          code: 'LILA_ERR_INVALID_OPTION',
          message: `"--rate-limit" must be <n>/s or <n>/m with n of 1 or more, optionally followed by ,burst=<b> (b of 1 or more), as in 100/s,burst=200, received "${text}"`
        });
      });
    }
  });

  describe('--max-body-size', () => {
    const valid = [['1', 1], ['1024', 1024], ['10k', 10240], ['10K', 10240], ['2m', 2 * 1024 * 1024], ['1g', 1024 * 1024 * 1024], [4096, 4096]];
    for (const [value, expected] of valid) {
      it(`reads ${value}`, () => assert.equal(validateSize(value, '--max-body-size'), expected));
    }
    for (const value of ['0', '1t', '1.5m', 'k', '', -1, 1.5]) {
      it(`refuses ${JSON.stringify(value)}`, () => {
        assert.throws(() => validateSize(value, '--max-body-size'), { code: 'LILA_ERR_INVALID_OPTION', message: /^"--max-body-size" must be a number of bytes/ });
      });
    }
  });

  describe('--sticky', () => {
    it('names the cookie lila, or as told', () => {
      assert.equal(parseSticky('cookie', '--sticky'), 'lila');
      assert.equal(parseSticky('cookie:SERVERID', '--sticky'), 'SERVERID');
    });
    for (const text of ['', 'ip', 'cookie:', 'cookie:a=b', 'cookie:a b', 'header:x']) {
      it(`refuses "${text}"`, () => {
        assert.throws(() => parseSticky(text, '--sticky'), { code: 'LILA_ERR_INVALID_OPTION', message: /^"--sticky" must be cookie or cookie:<name>/ });
      });
    }
  });

  describe('maxconn=N', () => {
    it('is a server parameter after a comma, and after a space in a hosts file', () => {
      assert.equal(parseServer('10.0.0.1:80,maxconn=50').maxConns, 50);
      assert.equal(parseServer('10.0.0.1:80,weight=2,maxconn=0,backup').maxConns, 0);
      assert.equal(parseServer('10.0.0.1:80').maxConns, undefined);
      const [server] = parseHostsFile('10.0.0.1:80 maxconn=7 weight=3\n', 'hosts');
      assert.deepEqual([server.maxConns, server.weight], [7, 3]);
    });

    for (const text of ['maxconn=', 'maxconn=-1', 'maxconn=1.5', 'maxconn=1000001', 'maxconn=x']) {
      it(`refuses ${text}`, () => {
        assert.throws(() => parseServer(`10.0.0.1:80,${text}`), {
          code: 'LILA_ERR_INVALID_SERVER',
          message: new RegExp(`^server "10\\.0\\.0\\.1:80,${text.replace('.', '\\.')}" has maxconn ".*"; a maxconn is an integer between 0 \\(no limit\\) and 1000000$`)
        });
      });
    }

    it('comes with server objects of the library too', () => {
      const proxy = createProxy({ mode: 'round-robin', servers: [{ host: '127.0.0.1', port: 1, maxConns: 4 }, '127.0.0.1:2'], maxConns: 2 });
      assert.deepEqual(proxy.backends.map((backend) => backend.maxConns), [4, 2]);
      assert.throws(() => createProxy({ mode: 'round-robin', servers: [{ host: '127.0.0.1', port: 1, maxConns: -1 }] }), { code: 'LILA_ERR_INVALID_SERVER' });
    });
  });

  describe('the library', () => {
    it('refuses the http-only limits on the tcp layer', () => {
      assert.throws(() => createProxy({ mode: 'round-robin', servers: ['127.0.0.1:1'], layer: 'tcp', sticky: 'cookie' }), {
        code: 'LILA_ERR_INVALID_OPTION', message: '"--sticky" needs the http layer; the tcp layer passes bytes it does not read'
      });
      assert.throws(() => createProxy({ mode: 'round-robin', servers: ['127.0.0.1:1'], layer: 'tcp', maxBodySize: 10 }), {
        code: 'LILA_ERR_INVALID_OPTION', message: /^"--max-body-size" needs the http layer/
      });
    });

    it('checks every value, naming the option', () => {
      const servers = ['127.0.0.1:1'];
      assert.throws(() => createProxy({ mode: 'round-robin', servers, maxQueue: -1 }), { message: /^"maxQueue" must be an integer of 0 or more/ });
      assert.throws(() => createProxy({ mode: 'round-robin', servers, queueTimeout: 0 }), { message: /^"queueTimeout" must be a duration/ });
      assert.throws(() => createProxy({ mode: 'round-robin', servers, maxConns: 'x' }), { message: /^"maxConns" must be an integer/ });
      assert.throws(() => createProxy({ mode: 'round-robin', servers, rateLimit: '5' }), { message: /^"rateLimit" must be <n>\/s/ });
      assert.throws(() => createProxy({ mode: 'round-robin', servers, maxConnections: -2 }), { message: /^"maxConnections" must be an integer/ });
    });
  });

  describe('the command line', () => {
    it('exits 2 with one line for a bad value', async () => {
      const results = await Promise.all([
        ['round-robin', '127.0.0.1:1', '--max-queue', 'many'],
        ['round-robin', '127.0.0.1:1', '--rate-limit', '10/h'],
        ['round-robin', '127.0.0.1:1', '--max-connections', '0'],
        ['round-robin', '127.0.0.1:1,maxconn=abc'],
        ['round-robin', '--layer', 'tcp', '127.0.0.1:1', '--max-body-size', '1m']
      ].map((args) => runLila(args)));

      assert.deepEqual(results.map((result) => result.code), [2, 2, 2, 2, 2]);
      assert.deepEqual(results.map((result) => result.stderr.split('\n')[0]), [
        'lila: "--max-queue" must be an integer of 0 or more, received "many"',
        'lila: "--rate-limit" must be <n>/s or <n>/m with n of 1 or more, optionally followed by ,burst=<b> (b of 1 or more), as in 100/s,burst=200, received "10/h"',
        'lila: "--max-connections" must be an integer of 1 or more, received "0"',
        'lila: server "127.0.0.1:1,maxconn=abc" has maxconn "abc"; a maxconn is an integer between 0 (no limit) and 1000000',
        'lila: "--max-body-size" needs the http layer; the tcp layer passes bytes it does not read'
      ]);
    });
  });
});
