'use strict';

const assert = require('node:assert/strict');
const fc = require('fast-check');
const { readClientHello, MAX_CLIENT_HELLO } = require('../lib/net/client-hello');
const { check, runs, seed, withinTime } = require('./property-run');
const { helloClients, frame, recordSizes, u16 } = require('./tls-hello');

const RUNS = { bytes: 2000, names: 1000, prefixes: 200, fragments: 1000, lengths: 1000 };
const MORE = { state: 'more' };
const NOT_TLS = { state: 'not-tls' };
const STATES = ['more', 'done', 'not-tls'];
// Cleanup steps of the test running, newest first (test/helpers.js would load all of lib/ for two functions).
const cleanups = [];
const { captureHello, nodeClient, opensslClient } = helloClients(onCleanup);

describe('readClientHello', () => {
  describe('with the ClientHellos of real clients', () => {
    afterEach(cleanup);

    const clients = [
      ['node with servername a.example', 'a.example', (port) => nodeClient({ port, servername: 'a.example' })],
      ['node with servername B.Example.', 'b.example', (port) => nodeClient({ port, servername: 'B.Example.' })],
      ['node with an IP as host and no servername', null, (port) => nodeClient({ port })],
      ['node on TLS 1.2 with ALPN, servername a.example', 'a.example',
        (port) => nodeClient({ port, servername: 'a.example', maxVersion: 'TLSv1.2', ALPNProtocols: ['h2', 'http/1.1'] })],
      ['openssl s_client -servername b.example', 'b.example', (port) => opensslClient(port, ['-servername', 'b.example'])],
      ['openssl s_client -noservername', null, (port) => opensslClient(port, ['-noservername'])]
    ];

    for (const [title, expected, connect] of clients) {
      it(`reads the name of ${title}: ${expected}`, async () => {
        const hello = await captureHello(connect);
        assert.deepEqual(readClientHello(hello), { state: 'done', serverName: expected });
        // What follows the hello (early data, the next records) changes nothing.
        assert.deepEqual(readClientHello(Buffer.concat([hello, Buffer.from([0x17, 3, 3, 0, 1, 0])])),
          { state: 'done', serverName: expected });
        for (let n = 0; n < hello.length; n++) assert.deepEqual(readClientHello(hello.subarray(0, n)), MORE, `${n} of ${hello.length} bytes`);
        const message = hello.subarray(5);
        for (let size = 1; size <= message.length; size++) {
          const framed = frame(message, recordSizes(message.length, size));
          const answer = framed.length <= MAX_CLIENT_HELLO ? { state: 'done', serverName: expected } : NOT_TLS;
          assert.deepEqual(readClientHello(framed), answer, `in records of ${size} bytes`);
        }
      });
    }
  });

  describe('refuses what is not a TLS ClientHello', () => {
    const hello = buildHello({ name: 'a.example', extensions: [{ type: 10, data: [0, 2, 0, 29] }] }).message;
    const cases = [
      ['an HTTP request', Buffer.from('GET / HTTP/1.1\r\n')],
      ['an SSH banner', Buffer.from('SSH-2.0-OpenSSH_9.6\r\n')],
      ['a PROXY v1 header', Buffer.from('PROXY TCP4 192.0.2.1 192.0.2.2 51234 443\r\n')],
      ['a PROXY v2 signature', Buffer.from('0d0a0d0a000d0a515549540a', 'hex')],
      ['an empty handshake record', Buffer.from([0x16, 3, 1, 0, 0])],
      ['an empty record followed by a hello', Buffer.concat([Buffer.from([0x16, 3, 1, 0, 0]), frame(hello)])],
      ['an alert record', Buffer.from([0x15, 3, 3, 0, 2, 2, 40])],
      ['a record of major version 2', Buffer.from([0x16, 2, 0, 0, 4, 1, 0, 0, 0])],
      ['an SSLv2-compatible hello', Buffer.from('8031010300180000001000', 'hex')],
      ['a record longer than 2^14 bytes', Buffer.from([0x16, 3, 1, 0x40, 0x01])],
      ['a ServerHello', Buffer.from([0x16, 3, 3, 0, 4, 2, 0, 0, 0])],
      ['a hello of length 0', frame(Buffer.from([1, 0, 0, 0]))],
      ['a hello larger than MAX_CLIENT_HELLO', Buffer.from([0x16, 3, 1, 0x40, 0x00, 1, 0, 0x50, 0])],
      ['a hello whose second record is an alert', Buffer.concat([frame(hello.subarray(0, 10)), Buffer.from([0x15, 3, 3, 0, 2, 2, 40])])],
      ['a hello whose session id is 33 bytes', corrupt(hello, (h) => { h[4 + 2 + 32] = 33; })],
      ['a hello of legacy version 2.0', corrupt(hello, (h) => { h[4] = 2; })],
      ['a hello with an odd cipher suites length', corrupt(hello, (h) => { h.writeUInt16BE(h.readUInt16BE(39) + 1, 39); })],
      ['a hello with no compression method', buildHello({ name: 'a.example', compression: [] }).record],
      ['a hello whose extensions run past it', corrupt(hello, (h) => setExtensionsLength(h, extensionsLength(h) + 1))],
      ['a hello whose extensions stop short of its end', corrupt(hello, (h) => setExtensionsLength(h, extensionsLength(h) - 1))],
      ['a hello with two server_name extensions', buildHello({ name: 'a.example', extensions: [sniExtension([[0, 'b.example']])] }).record],
      ['a hello with two host_names', buildHello({ extensions: [sniExtension([[0, 'a.example'], [0, 'b.example']])] }).record],
      ['a hello whose server_name list runs past its extension', buildHello({ extensions: [{ type: 0, data: [0, 20, 0, 0, 1, 0x61] }] }).record],
      ['a hello whose host_name runs past its list', buildHello({ extensions: [{ type: 0, data: [0, 4, 0, 0, 9, 0x61] }] }).record],
      ['an empty server_name extension', buildHello({ extensions: [{ type: 0, data: [] }] }).record]
    ];
    for (const [title, bytes] of cases) {
      it(`refuses ${title}`, () => {
        assert.deepEqual(readClientHello(bytes), NOT_TLS);
        // More bytes never change a refusal.
        assert.deepEqual(readClientHello(Buffer.concat([bytes, frame(hello)])), NOT_TLS);
      });
    }

    it('refuses a hello once it would end past MAX_CLIENT_HELLO, and never waits at or past it', () => {
      const big = buildHello({ name: 'a.example', extensions: [{ type: 21, data: Buffer.alloc(MAX_CLIENT_HELLO) }] }).message;
      const framed = frame(big, recordSizes(big.length, 16384));
      assert.deepEqual(readClientHello(framed), NOT_TLS);
      for (let n = 0; n < framed.length; n += 97) {
        const answer = readClientHello(framed.subarray(0, n));
        if (answer.state === 'more') assert.ok(n < MAX_CLIENT_HELLO);
        else assert.deepEqual(answer, NOT_TLS);
      }
    });
  });

  describe('names', () => {
    const names = [
      ['Example.COM', 'example.com'],
      ['a.example.', 'a.example'],
      ['a.example..', 'a.example.'],
      ['.', null],
      ['', null],
      ['a example', null],
      ['a\x00.example', null],
      ['caf\xe9.example', null],
      ['a.example\x7f', null],
      ['xn--caf-dma.example', 'xn--caf-dma.example'],
      ['127.0.0.1', '127.0.0.1']
    ];
    for (const [sent, expected] of names) {
      it(`reads the host_name "${escaped(sent)}" as ${JSON.stringify(expected)}`, () => {
        const { record } = buildHello({ extensions: [sniExtension([[0, sent]])] });
        assert.deepEqual(readClientHello(record), { state: 'done', serverName: expected });
      });
    }

    it('skips server names of other types', () => {
      const { record } = buildHello({ extensions: [sniExtension([[1, 'x'], [0, 'a.example'], [7, 'y']])] });
      assert.deepEqual(readClientHello(record), { state: 'done', serverName: 'a.example' });
      const other = buildHello({ extensions: [sniExtension([[1, 'a.example']])] });
      assert.deepEqual(readClientHello(other.record), { state: 'done', serverName: null });
    });

    it('reads no name from a hello without extensions, or with none', () => {
      assert.deepEqual(readClientHello(buildHello({ extensions: null }).record), { state: 'done', serverName: null });
      assert.deepEqual(readClientHello(buildHello({ extensions: [] }).record), { state: 'done', serverName: null });
    });
  });

  describe(`as properties (seed ${seed()})`, () => {
    it(`never throws nor loops on any bytes, answers one of three states, and never changes a decision (${runs(RUNS.bytes)} runs)`, () => {
      check(fc.property(anyBytes(), fc.uint8Array({ minLength: 1, maxLength: 64 }), (bytes, after) => {
        const answer = withinTime(() => readClientHello(bytes));
        assert.ok(STATES.includes(answer.state), JSON.stringify(answer));
        if (answer.state === 'more') assert.ok(bytes.length < MAX_CLIENT_HELLO);
        if (answer.state === 'done') assert.ok(answer.serverName === null || /^[!-~]+$/.test(answer.serverName));
        // The same bytes followed by others: a decision stands; nothing past the buffer was read.
        const longer = withinTime(() => readClientHello(Buffer.concat([bytes, after])));
        if (answer.state !== 'more') assert.deepEqual(longer, answer);
        const view = Buffer.concat([bytes, after]).subarray(0, bytes.length);
        assert.deepEqual(readClientHello(view), answer);
      }), RUNS.bytes);
    });

    it(`reads the name a generated ClientHello carries (${runs(RUNS.names)} runs)`, () => {
      check(fc.property(clientHello(), ({ record, expected }) => {
        assert.deepEqual(withinTime(() => readClientHello(record)), { state: 'done', serverName: expected });
      }), RUNS.names);
    });

    it(`waits for more at every cut of a generated ClientHello, in one record or many (${runs(RUNS.prefixes)} runs)`, () => {
      check(fc.property(clientHello(), fc.integer({ min: 1, max: 64 }), ({ message }, size) => {
        const framed = frame(message, recordSizes(message.length, size));
        fc.pre(framed.length <= MAX_CLIENT_HELLO);
        for (let n = 0; n < framed.length; n++) assert.deepEqual(readClientHello(framed.subarray(0, n)), MORE, `${n} of ${framed.length} bytes`);
      }), RUNS.prefixes);
    });

    it(`answers the same however records fragment a generated ClientHello (${runs(RUNS.fragments)} runs)`, () => {
      const input = clientHello().chain((hello) => fc.tuple(fc.constant(hello), fragmentSizes(hello.message.length)));
      check(fc.property(input, ([{ message, expected }, sizes]) => {
        const framed = frame(message, sizes);
        const answer = framed.length <= MAX_CLIENT_HELLO ? { state: 'done', serverName: expected } : NOT_TLS;
        assert.deepEqual(withinTime(() => readClientHello(framed)), answer);
      }), RUNS.fragments);
    });

    it(`refuses a generated ClientHello with any length run past its container (${runs(RUNS.lengths)} runs)`, () => {
      const input = clientHello().chain((hello) => fc.tuple(fc.constant(hello),
        fc.integer({ min: 0, max: hello.lengths.length - 1 }), fc.integer({ min: 1, max: 300 })));
      check(fc.property(input, ([{ message, lengths }, which, over]) => {
        const { at, width, dataStart, containerEnd } = lengths[which];
        // As far past as the field can say: a 1-byte field may fall short of its container's end.
        const value = Math.min(containerEnd - dataStart + over, 2 ** (8 * width) - 1);
        fc.pre(value > containerEnd - dataStart);
        const bent = Buffer.from(message);
        bent.writeUIntBE(value, at, width);
        assert.deepEqual(withinTime(() => readClientHello(frame(bent))), NOT_TLS);
      }), RUNS.lengths);
    });
  });
});

function onCleanup(fn) {
  cleanups.push(fn);
}

async function cleanup() {
  while (cleanups.length > 0) await cleanups.pop()();
}

// Random record sizes covering `length` bytes.
function fragmentSizes(length) {
  return fc.uniqueArray(fc.integer({ min: 1, max: Math.max(1, length - 1) }), { maxLength: Math.min(40, length - 1) })
    .map((cuts) => {
      const offsets = [0, ...cuts.filter((cut) => cut < length).sort((a, b) => a - b), length];
      return offsets.slice(1).map((offset, i) => offset - offsets[i]);
    });
}

// A copy of a one-record hello's handshake message bent by `edit`, framed as one record.
function corrupt(message, edit) {
  const bent = Buffer.from(message);
  edit(bent);
  return frame(bent);
}

// The extensions block's length of a hello built by buildHello (its last field).
function extensionsLength(message) {
  // legacy_version, random, session id, suites, compression: walk them as buildHello laid them.
  let p = 4 + 2 + 32;
  p += 1 + message[p];
  p += 2 + message.readUInt16BE(p);
  p += 1 + message[p];
  return message.readUInt16BE(p);
}

function setExtensionsLength(message, length) {
  message.writeUInt16BE(length, message.length - extensionsLength(message) - 2);
}

// A name as a title shows it: bytes outside printable ASCII escaped.
function escaped(name) {
  return name.replace(/[^\x20-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function sniExtension(entries) {
  const list = Buffer.concat(entries.map(([type, name]) => {
    const bytes = Buffer.from(name, 'latin1');
    return Buffer.concat([Buffer.from([type, bytes.length >> 8, bytes.length & 0xff]), bytes]);
  }));
  return { type: 0, data: Buffer.concat([u16(list.length), list]) };
}

/**
 * A ClientHello handshake message, the record carrying it, and where each of its
 * length fields is, with the end of the container it must stay within.
 *
 * @param {{name?: string, version?: number, random?: Uint8Array, sessionId?: Uint8Array,
 *   suites?: number[], compression?: number[], extensions?: Array<{type: number, data: ArrayLike<number>}> | null}} spec
 *   `name` adds a server_name extension holding that host_name, after the others
 */
function buildHello({ name, version = 0x0303, random = Buffer.alloc(32, 7), sessionId = Buffer.alloc(0),
  suites = [0x1301, 0xc02f], compression = [0], extensions = [] }) {
  const all = name === undefined || extensions === null ? extensions : [...extensions, sniExtension([[0, name]])];
  const parts = [];
  const lengths = [];
  let size = 4;
  const push = (bytes) => {
    parts.push(Buffer.from(bytes));
    size += bytes.length;
  };
  // A length field of `width` bytes, then its data; `containerEnd` filled in once the message is whole.
  const field = (width, data, container) => {
    lengths.push({ at: size, width, dataStart: size + width, container });
    push(width === 1 ? [data.length] : u16(data.length));
    push(data);
  };
  push(u16(version));
  push(random);
  field(1, sessionId, 'hello');
  field(2, Buffer.concat(suites.map(u16)), 'hello');
  field(1, compression, 'hello');
  if (all !== null) {
    const block = size;
    const blockPart = parts.length;
    push(u16(0));
    for (const { type, data } of all) {
      push(u16(type));
      if (type === 0 && data.length >= 2) {
        // The server_name extension: its list's length and each entry's length are fields too.
        const extensionEnd = size + 2 + data.length;
        lengths.push({ at: size, width: 2, dataStart: size + 2, container: 'hello' });
        lengths.push({ at: size + 2, width: 2, dataStart: size + 4, containerEnd: extensionEnd });
        for (let p = 2; p + 3 <= data.length; p += 3 + ((data[p + 1] << 8) | data[p + 2])) {
          lengths.push({ at: size + 2 + p + 1, width: 2, dataStart: size + 2 + p + 3, containerEnd: extensionEnd });
        }
        push(u16(data.length));
        push(data);
      } else {
        field(2, data, 'hello');
      }
    }
    parts[blockPart] = u16(size - block - 2);
    lengths.push({ at: block, width: 2, dataStart: block + 2, container: 'hello' });
  }
  for (const length of lengths) if (length.container === 'hello') length.containerEnd = size;
  const message = Buffer.concat([Buffer.from([1, (size - 4) >> 16, ((size - 4) >> 8) & 0xff, (size - 4) & 0xff]), ...parts]);
  return { message, record: frame(message), lengths };
}

/**
 * Generated ClientHellos: random versions, session ids, cipher suites,
 * compression methods and extensions (some large, as a post-quantum key share
 * is), with or without a server_name extension holding names of random labels
 * (or an unusable one) among names of other types; and the name expected.
 *
 * @returns {fc.Arbitrary<{message: Buffer, record: Buffer, lengths: object[], expected: string | null}>}
 */
function clientHello() {
  const label = fc.stringMatching(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,14}[A-Za-z0-9])?$/);
  const usableName = fc.tuple(fc.array(label, { minLength: 1, maxLength: 5 }), fc.boolean())
    .map(([labels, dot]) => `${labels.join('.')}${dot ? '.' : ''}`);
  const unusableName = fc.oneof(fc.constant(''), fc.constant('.'),
    fc.tuple(usableName, fc.constantFrom(' ', '\x00', '\x7f', '\xff', '\t')).map(([name, bad]) => `${name.slice(0, 3)}${bad}${name.slice(3)}`));
  const otherEntry = fc.tuple(fc.integer({ min: 1, max: 255 }), fc.string({ maxLength: 8 }));
  const sni = fc.record({
    name: fc.oneof({ weight: 5, arbitrary: usableName }, { weight: 1, arbitrary: unusableName }),
    before: fc.array(otherEntry, { maxLength: 2 }),
    after: fc.array(otherEntry, { maxLength: 2 })
  });
  const extension = fc.record({
    type: fc.integer({ min: 1, max: 0xffff }),
    data: fc.oneof({ weight: 8, arbitrary: fc.uint8Array({ maxLength: 40 }) }, { weight: 1, arbitrary: fc.uint8Array({ minLength: 1100, maxLength: 1300 }) })
  });
  return fc.record({
    version: fc.constantFrom(0x0301, 0x0302, 0x0303),
    random: fc.uint8Array({ minLength: 32, maxLength: 32 }),
    sessionId: fc.uint8Array({ maxLength: 32 }),
    suites: fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 1, maxLength: 40 }),
    compression: fc.uint8Array({ minLength: 1, maxLength: 3 }),
    extensions: fc.option(fc.array(extension, { maxLength: 8 }), { freq: 8 }),
    sni: fc.option(sni, { freq: 4 }),
    sniAt: fc.nat()
  }).map(({ sni, sniAt, extensions, ...spec }) => {
    let all = extensions;
    let expected = null;
    if (sni !== null) {
      all = [...(extensions ?? [])];
      all.splice(sniAt % (all.length + 1), 0, sniExtension([...sni.before, [0, sni.name], ...sni.after]));
      const name = sni.name.endsWith('.') ? sni.name.slice(0, -1) : sni.name;
      expected = /^[!-~]+$/.test(name) ? name.toLowerCase() : null;
    }
    return { ...buildHello({ ...spec, extensions: all }), expected };
  });
}

// Bytes of every kind: random, random after a handshake record header, and generated hellos bent at random bytes.
function anyBytes() {
  const bent = fc.tuple(clientHello(), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }))
    .map(([{ record }, edits]) => {
      const bytes = Buffer.from(record);
      for (const [at, value] of edits) bytes[at % bytes.length] = value;
      return bytes;
    });
  return fc.oneof(
    fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
    fc.tuple(fc.constantFrom(0, 1, 2, 3, 4), fc.uint8Array({ maxLength: 300 }))
      .map(([minor, bytes]) => Buffer.concat([Buffer.from([0x16, 3, minor]), bytes])),
    fc.tuple(fc.uint8Array({ maxLength: 300 }), fc.integer({ min: 0, max: 300 }))
      .map(([bytes, length]) => Buffer.concat([Buffer.from([0x16, 3, 1, length >> 8, length & 0xff, 1]), bytes])),
    bent
  );
}
