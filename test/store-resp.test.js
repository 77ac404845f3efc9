'use strict';

const assert = require('node:assert/strict');
const fc = require('fast-check');
const { RespParser, ReplyError, encodeCommand } = require('../lib/store/resp');
const { cuts, split } = require('./generators');
const { check, runs, seed } = require('./property-run');

const RUNS = 300;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

describe('RespParser', () => {
  it('reads every RESP2 type: status, error, integers, bulk strings, nulls and nested arrays', () => {
    const bytes = '+OK\r\n-NOSCRIPT No matching script\r\n:42\r\n:-7\r\n:9223372036854775807\r\n$5\r\nh\r\nlo\r\n$0\r\n\r\n' +
      '$-1\r\n*-1\r\n*0\r\n*3\r\n:1\r\n*2\r\n$1\r\na\r\n$-1\r\n-ERR inner\r\n$3\r\né!\r\n';
    assert.deepEqual(new RespParser().push(Buffer.from(bytes)), [
      'OK', new ReplyError('NOSCRIPT No matching script'), 42, -7, 9223372036854775807n, 'h\r\nlo', '',
      null, null, [], [1, ['a', null], new ReplyError('ERR inner')], 'é!'
    ]);
  });

  it('gives bulk strings as Buffers when asked', () => {
    assert.deepEqual(new RespParser({ buffers: true }).push(Buffer.from('*2\r\n$2\r\n\xff\x00\r\n+OK\r\n', 'latin1')),
      [[Buffer.from([0xff, 0]), 'OK']]);
  });

  it('keeps what a chunk cut: a CR and its LF apart, an array between its items', () => {
    const parser = new RespParser();
    assert.deepEqual(parser.push(Buffer.from('*2\r\n:1\r')), []);
    assert.deepEqual(parser.push(Buffer.from('\n$3\r\nab')), []);
    assert.deepEqual(parser.push(Buffer.from('c\r')), []);
    assert.deepEqual(parser.push(Buffer.from('\n+OK\r\n:')), [[1, 'abc'], 'OK']);
    assert.deepEqual(parser.push(Buffer.from('5\r\n')), [5]);
  });

  it('copies the pieces of a large bulk string once, when the last one arrives', () => {
    const value = Buffer.alloc(1024 * 1024, 'x');
    const bytes = Buffer.concat([Buffer.from(`$${value.length}\r\n`), value, Buffer.from('\r\n')]);
    const parser = new RespParser({ buffers: true });
    const concat = Buffer.concat;
    let concats = 0;
    Buffer.concat = (...args) => {
      concats++;
      return concat.apply(Buffer, args);
    };
    try {
      const replies = [];
      for (let offset = 0; offset < bytes.length; offset += 1000) replies.push(...parser.push(bytes.subarray(offset, offset + 1000)));
      assert.equal(replies.length, 1);
      assert.ok(replies[0].equals(value));
    } finally {
      Buffer.concat = concat;
    }
    // The header's line once it ended, the string's bytes once they were all there.
    assert.ok(concats <= 2, `${concats} copies`);
  });

  const garbage = [
    ['?what\r\n', /an unknown reply type "\?" \(0x3f\)/],
    [':1.5\r\n', /an integer reply that is not one: "1.5"/],
    ['$x\r\n', /a bulk string length that is not one: "x"/],
    ['$-2\r\n', /a bulk string length that is not one: "-2"/],
    ['$999999999999\r\n', /a bulk string of 999999999999, over the 536870912 taken/],
    ['*?\r\n', /an array length that is not one: "\?"/],
    ['$2\r\nabcd\r\n', /a bulk string of 2 bytes not followed by CRLF/]
  ];
  for (const [bytes, message] of garbage) {
    it(`refuses ${JSON.stringify(bytes)}`, () => assert.throws(() => new RespParser().push(Buffer.from(bytes)), message));
  }

  it('refuses a line that never ends once it is over 1 MiB', () => {
    const parser = new RespParser();
    parser.push(Buffer.from('+'));
    const piece = Buffer.alloc(64 * 1024, 'a');
    assert.throws(() => {
      for (let i = 0; i < 20; i++) parser.push(piece);
    }, /a line over 1048576 bytes/);
  });
});

describe('encodeCommand', () => {
  it('writes an array of bulk strings: strings as utf8, numbers in decimal, Buffers as they are', () => {
    assert.equal(encodeCommand(['SET', 'clé', 12, -1.5, 7n, Buffer.from([0, 1])]).toString('latin1'),
      '*6\r\n$3\r\nSET\r\n$4\r\ncl\xc3\xa9\r\n$2\r\n12\r\n$4\r\n-1.5\r\n$1\r\n7\r\n$2\r\n\x00\x01\r\n');
  });

  it('refuses what is not a command', () => {
    assert.throws(() => encodeCommand([]), { name: 'TypeError', message: 'a redis command must be a non-empty array, received an array of 0' });
    assert.throws(() => encodeCommand('PING'), { name: 'TypeError', message: 'a redis command must be a non-empty array, received "PING"' });
    assert.throws(() => encodeCommand(['GET', null]), { name: 'TypeError', message: /must be strings, Buffers or finite numbers, received null$/ });
    assert.throws(() => encodeCommand(['INCRBY', 'k', NaN]), { name: 'TypeError', message: /received NaN$/ });
  });
});

describe(`RespParser, as properties (seed ${seed()})`, () => {
  for (const buffers of [false, true]) {
    it(`reads back any replies, nested, cut anywhere, bulk strings as ${buffers ? 'Buffers' : 'strings'} (${runs(RUNS)} runs)`, () => {
      const input = fc.array(reply(buffers), { minLength: 1, maxLength: 6 }).chain((list) => {
        const bytes = Buffer.concat(list.map(encodeReply));
        return cuts(bytes.length).map((offsets) => ({ list, pieces: split(bytes, offsets) }));
      });
      check(fc.property(input, ({ list, pieces }) => {
        const parser = new RespParser({ buffers });
        const got = [];
        for (const piece of pieces) got.push(...parser.push(piece));
        assert.deepEqual(got, list.map(expected));
      }), RUNS);
    });
  }

  it(`reads back any command encodeCommand wrote, as an array of bulk strings (${runs(RUNS)} runs)`, () => {
    const arg = fc.oneof(fc.string({ unit: 'binary' }), fc.integer(), fc.uint8Array({ maxLength: 20 }).map((a) => Buffer.from(a)));
    check(fc.property(fc.array(arg, { minLength: 1, maxLength: 8 }), (args) => {
      const [got] = new RespParser({ buffers: true }).push(encodeCommand(args));
      assert.deepEqual(got, args.map((a) => Buffer.isBuffer(a) ? a : Buffer.from(String(a))));
    }), RUNS);
  });
});

// A reply as a tree of {type, value}: what is encoded, and what the parser gives back.
function reply(buffers) {
  const line = fc.string({ unit: 'binary', maxLength: 20 }).filter((s) => !/[\r\n]/.test(s));
  const bulk = buffers ? fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)) : fc.string({ unit: 'binary', maxLength: 40 });
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small', withCrossShrink: true },
      line.map((s) => ({ type: 'simple', value: s })),
      line.map((s) => ({ type: 'error', value: s })),
      fc.bigInt({ min: INT64_MIN, max: INT64_MAX }).map((n) => ({ type: 'integer', value: n })),
      bulk.map((b) => ({ type: 'bulk', value: b })),
      fc.constantFrom({ type: 'null bulk' }, { type: 'null array' }),
      tie('array')),
    array: fc.array(tie('value'), { maxLength: 4 }).map((items) => ({ type: 'array', value: items }))
  }));
  return value;
}

function encodeReply({ type, value }) {
  switch (type) {
    case 'simple': return Buffer.from(`+${value}\r\n`);
    case 'error': return Buffer.from(`-${value}\r\n`);
    case 'integer': return Buffer.from(`:${value}\r\n`);
    case 'bulk': {
      const bytes = Buffer.from(value);
      return Buffer.concat([Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from('\r\n')]);
    }
    case 'null bulk': return Buffer.from('$-1\r\n');
    case 'null array': return Buffer.from('*-1\r\n');
    default: return Buffer.concat([Buffer.from(`*${value.length}\r\n`), ...value.map(encodeReply)]);
  }
}

function expected({ type, value }) {
  switch (type) {
    case 'error': return new ReplyError(value);
    case 'integer': return Number.isSafeInteger(Number(value)) ? Number(value) : value;
    case 'null bulk':
    case 'null array': return null;
    case 'array': return value.map(expected);
    default: return value;
  }
}
