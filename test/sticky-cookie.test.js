'use strict';

const assert = require('node:assert/strict');
const { readCookie, withoutCookie, withStickyCookie, stickyCookieValue } = require('../lib/http/sticky-cookie');
const { stickyId } = require('../lib/balancing/sticky');

describe('sticky cookie headers', () => {
  describe('readCookie', () => {
    const cases = [
      { headers: ['Cookie', 'lila=abc'], expected: 'abc' },
      { headers: ['Host', 'x', 'cookie', 'a=1; lila=abc; b=2'], expected: 'abc' },
      { headers: ['COOKIE', 'a=1', 'Cookie', 'lila="q"'], expected: 'q' },
      { headers: ['Cookie', 'lila=first', 'Cookie', 'lila=second'], expected: 'first' },
      { headers: ['Cookie', 'lilac=1; xlila=2'], expected: null },
      { headers: ['Set-Cookie', 'lila=abc'], expected: null },
      { headers: ['Cookie', 'lila='], expected: '' },
      { headers: [], expected: null }
    ];
    for (const { headers, expected } of cases) {
      it(`reads ${JSON.stringify(expected)} from ${JSON.stringify(headers)}`, () => {
        assert.equal(readCookie(headers, 'lila'), expected);
      });
    }
  });

  describe('withoutCookie', () => {
    const cases = [
      { headers: ['Cookie', 'a=1; lila=abc; b=2'], expected: ['Cookie', 'a=1; b=2'] },
      { headers: ['Cookie', 'lila=abc; a=1'], expected: ['Cookie', 'a=1'] },
      { headers: ['Cookie', 'a=1;lila=abc'], expected: ['Cookie', 'a=1'] },
      { headers: ['Host', 'h', 'Cookie', 'lila=abc', 'X', 'y'], expected: ['Host', 'h', 'X', 'y'] },
      { headers: ['cookie', 'a=1', 'Cookie', 'lila=1; lila=2', 'cookie', 'b=2'], expected: ['cookie', 'a=1', 'cookie', 'b=2'] },
      { headers: ['Cookie', 'theme=dark;  session="x y"'], expected: ['Cookie', 'theme=dark;  session="x y"'] },
      { headers: ['Cookie', 'lilac=1'], expected: ['Cookie', 'lilac=1'] }
    ];
    for (const { headers, expected } of cases) {
      it(`turns ${JSON.stringify(headers)} into ${JSON.stringify(expected)}`, () => {
        assert.deepEqual(withoutCookie(headers, 'lila'), expected);
      });
    }

    it('hands back the same list when the cookie is not there', () => {
      const headers = ['Cookie', 'a=1', 'Host', 'h'];
      assert.equal(withoutCookie(headers, 'lila'), headers);
    });
  });

  describe('withStickyCookie', () => {
    it('adds Set-Cookie when the client has no cookie, or one for another backend', () => {
      assert.deepEqual(withStickyCookie(['A', '1'], 'lila', null, 'abc', false),
        ['A', '1', 'Set-Cookie', 'lila=abc; Path=/; HttpOnly; SameSite=Lax']);
      assert.deepEqual(withStickyCookie([], 'sid', 'old', 'abc', true), ['Set-Cookie', 'sid=abc; Path=/; HttpOnly; SameSite=Lax; Secure']);
    });

    it('adds nothing when the client has the cookie of this backend, and keeps the backend\'s own Set-Cookie', () => {
      const headers = ['Set-Cookie', 'app=1'];
      assert.equal(withStickyCookie(headers, 'lila', 'abc', 'abc', false), headers);
      assert.deepEqual(withStickyCookie(headers, 'lila', null, 'abc', false),
        ['Set-Cookie', 'app=1', 'Set-Cookie', stickyCookieValue('lila', 'abc', false)]);
    });
  });

  describe('stickyId', () => {
    it('depends on the name alone: 16 hex digits, the same every time, different for another name', () => {
      assert.match(stickyId('api-1'), /^[0-9a-f]{16}$/);
      assert.equal(stickyId('api-1'), stickyId('api-1'));
      assert.notEqual(stickyId('api-1'), stickyId('api-2'));
      assert.ok(!stickyId('10.0.0.1:8080').includes('10.0.0.1'));
    });
  });
});
