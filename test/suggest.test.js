'use strict';

const assert = require('node:assert/strict');
const { editDistance, closest, didYouMean } = require('../lib/config/suggest');
const { LONG_NAMES } = require('../lib/config/options');
const { strategies } = require('../lib/balancing/strategies');

describe('suggest', () => {
  describe('editDistance', () => {
    const cases = [
      { a: '', b: '', expected: 0 },
      { a: 'port', b: 'port', expected: 0 },
      { a: '', b: 'port', expected: 4 },
      { a: 'port', b: '', expected: 4 },
      { a: 'strip-prefx', b: 'strip-prefix', expected: 1 },
      { a: 'round-robbin', b: 'round-robin', expected: 1 },
      { a: 'prot', b: 'port', expected: 1 },
      { a: 'web', b: 'wbe', expected: 1 },
      { a: 'ca', b: 'abc', expected: 3 },
      { a: 'kitten', b: 'sitting', expected: 3 },
      { a: 'least-conn', b: 'least-connections', expected: 7 }
    ];

    for (const { a, b, expected } of cases) {
      it(`counts ${expected} between "${a}" and "${b}"`, () => {
        assert.equal(editDistance(a, b), expected);
        assert.equal(editDistance(b, a), expected);
      });
    }
  });

  describe('closest', () => {
    const cases = [
      { word: 'strip-prefx', candidates: LONG_NAMES, expected: 'strip-prefix' },
      { word: 'helth-check', candidates: LONG_NAMES, expected: 'health-check' },
      { word: 'no-http', candidates: LONG_NAMES, expected: 'no-http2' },
      { word: 'round-robbin', candidates: Object.keys(strategies), expected: 'round-robin' },
      { word: 'Least-Connections', candidates: Object.keys(strategies), expected: 'least-connections' },
      { word: 'rnd-robin', candidates: Object.keys(strategies), expected: 'round-robin' },
      // Closer than a third of the word only: a short word is matched by one edit at most.
      { word: 'wbe', candidates: ['web', 'api'], expected: 'web' },
      { word: 'wb', candidates: ['web', 'api'], expected: undefined },
      { word: 'b', candidates: ['a'], expected: undefined },
      { word: 'aip', candidates: ['web', 'api'], expected: 'api' },
      { word: 'bogus', candidates: LONG_NAMES, expected: undefined },
      { word: 'least-conn', candidates: Object.keys(strategies), expected: undefined },
      // Never the word itself: it is no mistake.
      { word: 'port', candidates: LONG_NAMES, expected: undefined },
      // Of two as close, the first.
      { word: 'ab', candidates: ['abc', 'abd'], expected: undefined },
      { word: 'abcdef', candidates: ['abcdex', 'abcdey'], expected: 'abcdex' }
    ];

    for (const { word, candidates, expected } of cases) {
      it(`suggests ${expected === undefined ? 'nothing' : expected} for "${word}"`, () => {
        assert.equal(closest(word, candidates), expected);
      });
    }
  });

  describe('didYouMean', () => {
    it('ends a message with the suggestion, written as the word was', () => {
      assert.equal(didYouMean('strip-prefx', LONG_NAMES, '--'), '; did you mean --strip-prefix?');
      assert.equal(didYouMean('apu', new Set(['api', 'web']).keys()), '; did you mean api?');
    });

    it('adds nothing when no candidate is close', () => {
      assert.equal(didYouMean('bogus', LONG_NAMES, '--'), '');
      assert.equal(didYouMean('x', []), '');
    });
  });
});
