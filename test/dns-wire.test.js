'use strict';

// lib/dns: messages, names and TSIG as BIND 9 reads and writes them (a real named, test/named.js,
// accepting lila's signed updates and answering what dig reads back), and the decoder as a
// property: any bytes read whole or refused with a RangeError, any message read back as written.

const assert = require('node:assert/strict');
const fc = require('fast-check');
const { cleanup } = require('./helpers');
const { needNamed, startNamed } = require('./named');
const { check, runs, seed, withinTime } = require('./property-run');
const { TYPES, CLASSES, encodeMessage, decodeMessage, encodeName, decodeName, txtData } = require('../lib/dns/message');
const { signMessage, verifyResponse, parseTsigKey } = require('../lib/dns/tsig');
const { updateTxt, DnsUpdateError } = require('../lib/dns/update');
const { findZone, nameservers, txtMissing } = require('../lib/dns/lookup');

const RUNS = { decode: 2000, roundTrip: 500 };

describe('DNS names and messages', () => {
  it('writes names lower-cased in wire form, escapes read, and refuses long labels and names', () => {
    assert.deepEqual(encodeName('Ab.Example.'), Buffer.from('\x02ab\x07example\x00', 'latin1'));
    assert.deepEqual(encodeName(''), Buffer.from([0]));
    assert.deepEqual(encodeName('a\\.b.c'), Buffer.from('\x03a.b\x01c\x00', 'latin1'));
    assert.deepEqual(encodeName('\\000x'), Buffer.from('\x02\x00x\x00', 'latin1'));
    assert.throws(() => encodeName(`${'a'.repeat(64)}.test`), RangeError);
    assert.throws(() => encodeName(Array(128).fill('a').join('.')), RangeError);
    assert.throws(() => encodeName('a..b'), RangeError);
    assert.throws(() => encodeName('é.test'), RangeError);
  });

  it('follows compression pointers backwards only, and refuses loops and names cut short', () => {
    const message = Buffer.from('\x00\x00\x01a\x00\x01b\xc0\x02', 'latin1');
    assert.deepEqual(decodeName(message, 5), { name: 'b.a', end: 9 });
    assert.throws(() => decodeName(Buffer.from('\xc0\x00', 'latin1'), 0), /does not point backwards/);
    assert.throws(() => decodeName(Buffer.from('\x05ab', 'latin1'), 0), /cut short/);
    assert.throws(() => decodeName(Buffer.from('\x80', 'latin1'), 0), /unknown kind/);
  });

  it('splits a TXT value over 255 bytes into strings, and reads it back whole', () => {
    const value = 'x'.repeat(300);
    const encoded = encodeMessage({ id: 7, flags: { qr: true }, questions: [], answers: [{ name: 'a.test', type: TYPES.TXT, class: CLASSES.IN, ttl: 5, data: txtData(value) }] });
    const [record] = decodeMessage(encoded).answers;
    assert.deepEqual(record.value.map((text) => text.length), [255, 45]);
    assert.equal(record.value.join(''), value);
  });

  it('reads NAME:ALGORITHM:SECRET keys, and refuses the others naming what is wrong', () => {
    assert.deepEqual(parseTsigKey('k:HMAC-SHA512:c2VjcmV0'), { name: 'k', algorithm: 'hmac-sha512', secret: Buffer.from('secret') });
    assert.throws(() => parseTsigKey('k:hmac-md5:c2VjcmV0'), /one of hmac-sha1, hmac-sha224, hmac-sha256/);
    assert.throws(() => parseTsigKey('k:hmac-sha256'), /NAME:ALGORITHM:SECRET/);
    assert.throws(() => parseTsigKey('k:hmac-sha256:not base64!'), /the secret base64/);
  });

  it('finds a signed response whose MAC was changed, or that is not signed', () => {
    const key = parseTsigKey('k:hmac-sha256:c2VjcmV0');
    const request = encodeMessage({ id: 1, flags: {}, questions: [{ name: 'a.test', type: TYPES.SOA, class: CLASSES.IN }] });
    const { signed } = signMessage(request, key, 1700000000);
    const decoded = decodeMessage(signed);
    assert.equal(decoded.additionals[0].type, TYPES.TSIG);
    assert.equal(decoded.tsigStart, request.length);
    assert.equal(verifyResponse(request, decodeMessage(request), key, Buffer.alloc(32)), 'no TSIG');
    // Our request's own signature checked as a response's would be: a wrong MAC, not a crash.
    assert.equal(verifyResponse(signed, decoded, key, Buffer.alloc(32)), 'a wrong MAC');
  });
});

describe(`DNS decoder, as properties (seed ${seed()})`, () => {
  const label = fc.stringMatching(/^[a-z0-9-]{1,20}$/);
  const name = fc.array(label, { minLength: 0, maxLength: 6 }).map((labels) => labels.join('.'));
  const record = fc.record({
    name,
    type: fc.constantFrom(TYPES.TXT, 99, TYPES.A),
    class: fc.constantFrom(CLASSES.IN, CLASSES.NONE, CLASSES.ANY),
    ttl: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    text: fc.string({ maxLength: 600 })
  }).map(({ text, ...rest }) => ({ ...rest, data: rest.type === TYPES.A ? Buffer.from([192, 0, 2, 1]) : txtData(text) }));
  const message = fc.record({
    id: fc.integer({ min: 0, max: 65535 }),
    flags: fc.record({ qr: fc.boolean(), opcode: fc.constantFrom(0, 5), aa: fc.boolean(), tc: fc.boolean(), rd: fc.boolean(), ra: fc.boolean(), rcode: fc.integer({ min: 0, max: 15 }) }),
    questions: fc.array(fc.record({ name, type: fc.constantFrom(TYPES.SOA, TYPES.TXT), class: fc.constant(CLASSES.IN) }).map((question) => ({ ...question })), { maxLength: 2 }),
    answers: fc.array(record, { maxLength: 3 }),
    authorities: fc.array(record, { maxLength: 2 }),
    additionals: fc.array(record, { maxLength: 2 })
  });

  it(`reads any bytes whole or refuses them with a RangeError, never looping (${runs(RUNS.decode)} runs)`, () => {
    check(fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      try {
        withinTime(() => decodeMessage(Buffer.from(bytes)));
      } catch (err) {
        assert.ok(err instanceof RangeError, err.stack);
      }
    }), RUNS.decode);
  });

  it(`reads back every message it writes, and any prefix of it is refused (${runs(RUNS.roundTrip)} runs)`, () => {
    check(fc.property(message, fc.nat(), (written, cut) => {
      const encoded = encodeMessage(written);
      const read = decodeMessage(encoded);
      assert.equal(read.id, written.id);
      assert.deepEqual(read.flags, { ...written.flags });
      assert.deepEqual(read.questions, written.questions);
      for (const section of ['answers', 'authorities', 'additionals']) {
        assert.deepEqual(read[section].map(({ name: n, type, class: c, ttl, data }) => ({ name: n, type, class: c, ttl, data: Buffer.from(data) })),
          written[section]);
      }
      assert.throws(() => decodeMessage(encoded.subarray(0, cut % encoded.length)), RangeError);
    }), RUNS.roundTrip);
  });
});

describe('lib/dns against BIND 9', function () {
  this.timeout(20000);

  before(function () {
    needNamed(this);
  });
  afterEach(cleanup);

  for (const algorithm of ['hmac-sha256', 'hmac-sha512']) {
    it(`adds and deletes TXT records by signed update (${algorithm}), checks BIND's signed answer, and reads the zone as BIND serves it`, async () => {
      const named = await startNamed({ algorithm });
      const server = { host: '127.0.0.1', port: named.port };
      const key = parseTsigKey(named.tsig);
      const zone = await findZone('_acme-challenge.a.example.test', [server], { recursion: false });
      assert.equal(zone, 'example.test');
      assert.deepEqual(await nameservers(zone, [server]), [{ name: 'ns.example.test', address: '127.0.0.1' }]);

      await updateTxt(server, { action: 'add', zone, name: '_acme-challenge.example.test', value: 'one', key });
      await updateTxt(server, { action: 'add', zone, name: '_acme-challenge.example.test', value: 'two', key });
      assert.deepEqual((await named.txt('_acme-challenge.example.test')).sort(), ['one', 'two']);
      assert.equal(await txtMissing(server, '_acme-challenge.example.test', 'two'), null);
      await updateTxt(server, { action: 'delete', zone, name: '_acme-challenge.example.test', value: 'one', key });
      assert.deepEqual(await named.txt('_acme-challenge.example.test'), ['two']);
      assert.equal(await txtMissing(server, '_acme-challenge.example.test', 'one'), '1 other value');
      await updateTxt(server, { action: 'delete', zone, name: '_acme-challenge.example.test', value: 'two', key });
      // The zone's `*` A record matches the name: no TXT there, but not NXDOMAIN.
      assert.equal(await txtMissing(server, '_acme-challenge.example.test', 'two'), '0 other values');
    });
  }

  it('names the server and the reason of every refusal: BADSIG, BADKEY, REFUSED, NOTAUTH, a closed port', async () => {
    const named = await startNamed();
    const server = { host: '127.0.0.1', port: named.port };
    const key = parseTsigKey(named.tsig);
    const change = { action: 'add', zone: 'example.test', name: 'x.example.test', value: 'v' };
    const refusal = async (target, more) => {
      const err = await updateTxt(target, { ...change, ...more }).then(() => null, (error) => error);
      assert.ok(err instanceof DnsUpdateError, String(err));
      assert.equal(err.server, `${target.host}:${target.port}`);
      return err.reason;
    };
    assert.equal(await refusal(server, { key: { ...key, secret: Buffer.from('another secret') } }), 'NOTAUTH (BADSIG)');
    assert.equal(await refusal(server, { key: { ...key, name: 'nobody' } }), 'NOTAUTH (BADKEY)');
    assert.equal(await refusal(server, { key: null }), 'REFUSED');
    assert.equal(await refusal(server, { key, zone: 'other.test', name: 'x.other.test' }), 'NOTAUTH');
    await named.stop();
    assert.equal(await refusal(server, { key }), 'ECONNREFUSED');
  });
});
