'use strict';

const assert = require('node:assert/strict');
const { parseServer } = require('../lib');

describe('parseServer', () => {
  const valid = [
    { spec: 'localhost:1337', expected: { name: 'localhost:1337', host: 'localhost', port: 1337, weight: 1, backup: false } },
    { spec: 'example.com:80', expected: { name: 'example.com:80', host: 'example.com', port: 80, weight: 1, backup: false } },
    { spec: '127.0.0.1:7777', expected: { name: '127.0.0.1:7777', host: '127.0.0.1', port: 7777, weight: 1, backup: false } },
    { spec: '[::1]:8001', expected: { name: '[::1]:8001', host: '::1', port: 8001, weight: 1, backup: false } },
    { spec: 'a-b_c.local:65535', expected: { name: 'a-b_c.local:65535', host: 'a-b_c.local', port: 65535, weight: 1, backup: false } },
    { spec: 'localhost:8001,weight=3', expected: { name: 'localhost:8001', host: 'localhost', port: 8001, weight: 3, backup: false } },
    { spec: '10.0.0.9:80,backup', expected: { name: '10.0.0.9:80', host: '10.0.0.9', port: 80, weight: 1, backup: true } },
    { spec: '[fe80::1]:80,backup,weight=0', expected: { name: '[fe80::1]:80', host: 'fe80::1', port: 80, weight: 0, backup: true } }
  ];
  for (const { spec, expected } of valid) {
    it(`parses "${spec}"`, () => {
      assert.deepEqual(parseServer(spec), expected);
    });
  }

  const invalid = [
    { spec: 'localhost', message: /needs a port/ },
    { spec: ':80', message: /has no host/ },
    { spec: 'a:0', message: /port "0"; a port is an integer between 1 and 65535/ },
    { spec: 'a:65536', message: /port "65536"/ },
    { spec: 'a:', message: /needs a port after ":"/ },
    { spec: 'a:8o', message: /port "8o"/ },
    { spec: 'a:+80', message: /port "\+80"/ },
    { spec: 'http://a:80', message: /must not have a scheme/ },
    { spec: '::1:80', message: /IPv6 address without brackets/ },
    { spec: '[::1:80', message: /no closing "]"/ },
    { spec: '[::1]', message: /needs a port/ },
    { spec: '[nope]:80', message: /not an IPv6 address/ },
    { spec: 'a b:80', message: /invalid host "a b"/ },
    { spec: 'a:80,weight=1001', message: /weight "1001"/ },
    { spec: 'a:80,weight=-1', message: /weight "-1"/ },
    { spec: 'a:80,weight=', message: /weight ""/ },
    { spec: 'a:80,primary', message: /unknown parameter "primary"/ },
    { spec: '', message: /is empty/ }
  ];
  for (const { spec, message } of invalid) {
    it(`rejects "${spec}" naming the problem`, () => {
      assert.throws(() => parseServer(spec), (err) => {
        assert.equal(err.code, 'LILA_ERR_INVALID_SERVER');
        assert.equal(err.isUsageError, true);
        assert.match(err.message, message);
        assert.ok(err.message.startsWith(`server "${spec}" `));
        return true;
      });
    });
  }
});
