'use strict';

const assert = require('node:assert/strict');
const fc = require('fast-check');
const { JsonObjectStream } = require('../lib/store/json-stream');
const { cuts, split } = require('./generators');
const { check, runs, seed } = require('./property-run');

const RUNS = 200;

describe('JsonObjectStream', () => {
  it('splits etcd\'s watch answers, one a line, whatever the chunks', () => {
    const text = '{"result":{"header":{"revision":"3"},"created":true}}\n' +
      '{"result":{"events":[{"kv":{"key":"Zm9v","value":"e30="}},{"type":"DELETE","kv":{"key":"Ylx9"}}]}}\n';
    const stream = new JsonObjectStream();
    const objects = [];
    for (const piece of [text.slice(0, 20), text.slice(20, 60), text.slice(60, 61), text.slice(61)]) objects.push(...stream.push(Buffer.from(piece)));
    assert.deepEqual(objects, text.trim().split('\n').map((line) => JSON.parse(line)));
  });

  it('refuses what is not a stream of objects', () => {
    assert.throws(() => new JsonObjectStream().push('{"a":1} x'), /expected a JSON object, received "x"/);
    assert.throws(() => new JsonObjectStream().push('[1]'), /expected a JSON object/);
    assert.throws(() => new JsonObjectStream().push('{"a":1}}'), /unexpected "}" between JSON objects/);
    assert.throws(() => new JsonObjectStream().push('{"a":}'), SyntaxError);
  });
});

describe(`JsonObjectStream, as properties (seed ${seed()})`, () => {
  it(`gives back the objects of any text cut anywhere, multi-byte characters and braces in strings included (${runs(RUNS)} runs)`, () => {
    const key = fc.string({ unit: fc.constantFrom('a', '{', '}', '[', ']', '"', '\\', 'é', '😀', ' ', '\n'), maxLength: 6 });
    const object = fc.dictionary(key, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 });
    const gap = fc.constantFrom('', '\n', '\r\n', ' ', '\n\n');
    const input = fc.array(fc.tuple(object, gap), { maxLength: 5 }).chain((list) => {
      const bytes = Buffer.from(list.map(([value, between]) => JSON.stringify(value) + between).join(''));
      return cuts(bytes.length).map((offsets) => ({ objects: list.map(([value]) => value), pieces: split(bytes, offsets) }));
    });
    check(fc.property(input, ({ objects, pieces }) => {
      const stream = new JsonObjectStream();
      const got = [];
      for (const piece of pieces) got.push(...stream.push(piece));
      // -0 travels as 0 in JSON.
      assert.deepEqual(got, JSON.parse(JSON.stringify(objects)));
    }), RUNS);
  });
});
