'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const fc = require('fast-check');
const { parseProxyHeader, proxyHeaderV1, proxyHeaderV2 } = require('../lib/net/proxy-protocol');
const { proxyHeaderBytes, proxyEnds, cuts, split } = require('./generators');
const { check, runs, seed, withinTime } = require('./property-run');

const RUNS = { total: 2000, prefixes: 1000, written: 1000 };
// The shortest header: `PROXY UNKNOWN\r\n`.
const MIN_HEADER = 15;

describe(`PROXY protocol headers, as properties (seed ${seed()})`, () => {
  it(`are read whole, refused with a reason, or waited for; never thrown on, nor read past their bytes (${runs(RUNS.total)} runs)`, () => {
    check(fc.property(proxyHeaderBytes(), fc.uint8Array({ maxLength: 8 }), (bytes, after) => {
      const result = withinTime(() => parseProxyHeader(bytes));
      assertShape(result, bytes.length);
      // The same bytes at the start of a larger buffer, viewed alone: nothing past them counts.
      const view = Buffer.concat([bytes, Buffer.from(after)]).subarray(0, bytes.length);
      assert.deepEqual(parseProxyHeader(view), result);
    }), RUNS.total);
  });

  it(`decide at the same byte however the header arrives, and never change their mind (${runs(RUNS.prefixes)} runs)`, () => {
    const input = proxyHeaderBytes().chain((bytes) => fc.tuple(fc.constant(bytes), cuts(bytes.length)));
    check(fc.property(input, ([bytes, offsets]) => {
      const whole = parseProxyHeader(bytes);
      // As --accept-proxy reads: each read added to what came before, then parsed again.
      let received = Buffer.alloc(0);
      let decided = null;
      for (const piece of split(bytes, offsets)) {
        received = Buffer.concat([received, piece]);
        decided = withinTime(() => parseProxyHeader(received));
        if (decided !== null) break;
      }
      if (decided === null) {
        assert.equal(whole, null);
      } else if (decided.error !== undefined) {
        assert.ok(whole !== null && whole.error !== undefined, `refused after ${received.length} bytes (${decided.error}), not when whole`);
      } else {
        assert.deepEqual(decided, whole);
      }
      // Every prefix: undecided, or decided as the whole is.
      for (let n = 0; n < bytes.length; n++) {
        const early = parseProxyHeader(bytes.subarray(0, n));
        if (early === null) continue;
        if (early.error !== undefined) assert.ok(whole?.error !== undefined, `refused at ${n} bytes (${early.error}), not when whole`);
        else assert.deepEqual(early, whole);
      }
    }), RUNS.prefixes);
  });

  it(`read back the client their writer wrote, v1 and v2, whatever the two ends' families (${runs(RUNS.written)} runs)`, () => {
    check(fc.property(proxyEnds(), ({ source, destination }) => {
      for (const header of [proxyHeaderV1(source, destination), proxyHeaderV2(source, destination)]) {
        const read = parseProxyHeader(header);
        assert.equal(read.length, header.length);
        const expected = expectedSource(source, destination);
        assert.deepEqual(read.source, expected);
        if (header[0] === 0x50) assert.ok(header.length <= 107, `${header.length} bytes: ${header}`);
      }
    }), RUNS.written);
  });
});

// A parse result is null, an error with a one-line reason, or a header within the buffer.
function assertShape(result, length) {
  if (result === null) return;
  if (result.error !== undefined) {
    assert.equal(typeof result.error, 'string');
    assert.doesNotMatch(result.error, /[\r\n]/);
    return;
  }
  assert.ok(Number.isInteger(result.length) && result.length >= MIN_HEADER && result.length <= length, `length ${result.length} of ${length}`);
  if (result.source === null) return;
  assert.notEqual(net.isIP(result.source.address), 0, result.source.address);
  assert.ok(Number.isInteger(result.source.port) && result.source.port >= 0 && result.source.port <= 65535);
}

// What a header written for these ends says of its source: its canonical address (IPv4 mapped
// into IPv6 beside an IPv6 destination, without a zone index), or null when an end is unknown.
function expectedSource(source, destination) {
  const plain = (end) => (end && typeof end.address === 'string' ? end.address.replace(/%.*$/, '') : '');
  const from = plain(source);
  const to = plain(destination);
  if (source === null || destination === null || net.isIP(from) === 0 || net.isIP(to) === 0) return null;
  const mixed = net.isIP(from) !== net.isIP(to);
  if (net.isIP(from) === 4 && !mixed) return { address: from, port: source.port };
  const v6 = net.isIP(from) === 4 ? `::ffff:${from}` : from;
  return { address: new net.SocketAddress({ address: v6, family: 'ipv6' }).address, port: source.port };
}
