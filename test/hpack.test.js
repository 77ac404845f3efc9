'use strict';

// lib/h2's HPACK (RFC 7541): the Huffman table checked whole, every example of Appendix C decoded
// to its fields and dynamic table and encoded to its bytes where the encoder makes the RFC's
// choices, malformed blocks refused with an HpackError, properties over many blocks on one
// connection's tables, and Node's own http2 client (nghttp2) as the peer on a raw socket: its
// request blocks decoded, our response blocks read by it.

const assert = require('node:assert/strict');
const http2 = require('node:http2');
const net = require('node:net');
const fc = require('fast-check');
const { cleanup, onCleanup } = require('./helpers');
const { check, runs, seed, withinTime } = require('./property-run');
const { HpackError, HpackDecoder, HpackEncoder } = require('../lib/h2/hpack');
const { CODES, LENGTHS, EOS } = require('../lib/h2/huffman-table');
const { decodeHuffman, encodeHuffman, huffmanLength } = require('../lib/h2/huffman');
const { STATIC_NAMES } = require('../lib/h2/static-table');

const RUNS = { huffman: 500, roundTrip: 300, bytes: 2000 };
const DATE_21 = 'Mon, 21 Oct 2013 20:13:21 GMT';
const DATE_22 = 'Mon, 21 Oct 2013 20:13:22 GMT';
const COOKIE = 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1';

// RFC 7541 Appendix C: each block's bytes, its fields, and the dynamic table after it (newest
// first) with its size.
const C3 = [
  { hex: '828684410f7777772e6578616d706c652e636f6d',
    fields: [':method', 'GET', ':scheme', 'http', ':path', '/', ':authority', 'www.example.com'],
    table: [[':authority', 'www.example.com']], size: 57 },
  { hex: '828684be58086e6f2d6361636865',
    fields: [':method', 'GET', ':scheme', 'http', ':path', '/', ':authority', 'www.example.com', 'cache-control', 'no-cache'],
    table: [['cache-control', 'no-cache'], [':authority', 'www.example.com']], size: 110 },
  { hex: '828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565',
    fields: [':method', 'GET', ':scheme', 'https', ':path', '/index.html', ':authority', 'www.example.com', 'custom-key', 'custom-value'],
    table: [['custom-key', 'custom-value'], ['cache-control', 'no-cache'], [':authority', 'www.example.com']], size: 164 }
];
const C4 = [
  { ...C3[0], hex: '828684418cf1e3c2e5f23a6ba0ab90f4ff' },
  { ...C3[1], hex: '828684be5886a8eb10649cbf' },
  { ...C3[2], hex: '828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf' }
];
const C5 = [
  { hex: '4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d',
    fields: [':status', '302', 'cache-control', 'private', 'date', DATE_21, 'location', 'https://www.example.com'],
    table: [['location', 'https://www.example.com'], ['date', DATE_21], ['cache-control', 'private'], [':status', '302']], size: 222 },
  { hex: '4803333037c1c0bf',
    fields: [':status', '307', 'cache-control', 'private', 'date', DATE_21, 'location', 'https://www.example.com'],
    table: [[':status', '307'], ['location', 'https://www.example.com'], ['date', DATE_21], ['cache-control', 'private']], size: 222 },
  { hex: '88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31',
    fields: [':status', '200', 'cache-control', 'private', 'date', DATE_22, 'location', 'https://www.example.com', 'content-encoding', 'gzip', 'set-cookie', COOKIE],
    table: [['set-cookie', COOKIE], ['content-encoding', 'gzip'], ['date', DATE_22]], size: 215 }
];
const C6 = [
  { ...C5[0], hex: '488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3' },
  { ...C5[1], hex: '4883640effc1c0bf' },
  { ...C5[2], hex: '88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007' }
];

describe('HPACK: the Huffman code (RFC 7541 Appendix B)', () => {
  it('has 257 codes, prefix-free, whose lengths satisfy Kraft\'s equality', () => {
    assert.equal(CODES.length, EOS + 1);
    assert.equal(LENGTHS.length, EOS + 1);
    let kraft = 0n;
    for (const length of LENGTHS) kraft += 1n << BigInt(30 - length);
    assert.equal(kraft, 1n << 30n);
    // Left-aligned on 30 bits and sorted, each code's span ends before the next begins.
    const spans = [...CODES].map((code, symbol) => {
      assert.ok(code < 2 ** LENGTHS[symbol], `symbol ${symbol}'s code fits its length`);
      const start = BigInt(code) << BigInt(30 - LENGTHS[symbol]);
      return { symbol, start, end: start + (1n << BigInt(30 - LENGTHS[symbol])) };
    }).sort((a, b) => (a.start < b.start ? -1 : 1));
    for (let i = 1; i < spans.length; i++) assert.ok(spans[i].start >= spans[i - 1].end, `${spans[i - 1].symbol} is a prefix of ${spans[i].symbol}`);
    assert.equal(CODES[EOS], 0x3fffffff);
  });

  it('decodes the strings of Appendix C.4 and C.6, and refuses EOS and bad padding', () => {
    const strings = {
      'f1e3c2e5f23a6ba0ab90f4ff': 'www.example.com', 'a8eb10649cbf': 'no-cache', '25a849e95bb8e8b4bf': 'custom-value',
      '6402': '302', 'aec3771a4b': 'private', 'd07abe941054d444a8200595040b8166e082a62d1bff': DATE_21,
      '9d29ad171863c78f0b97c8e9ae82ae43d3': 'https://www.example.com', '9bd9ab': 'gzip'
    };
    for (const [hex, text] of Object.entries(strings)) {
      assert.equal(huffman(hex), text);
      const out = Buffer.alloc(64);
      assert.equal(out.subarray(0, encodeHuffman(text, out, 0)).toString('hex'), hex);
      assert.equal(huffmanLength(text), hex.length / 2);
    }
    // Padding past 7 bits, padding not all ones, padding ending inside a code, EOS itself.
    for (const hex of ['ff', '1fff', '1fffff', 'ff9fffffff', '52bc30ffffffff', '00', 'fffffffffc']) assert.equal(huffman(hex), null, hex);
    assert.equal(huffman(''), '');
  });

  it(`round-trips any latin1 string, at the length huffmanLength gives (seed ${seed()}, ${runs(RUNS.huffman)} runs)`, () => {
    check(fc.property(latin1(200), (text) => {
      const out = Buffer.alloc(huffmanLength(text));
      assert.equal(encodeHuffman(text, out, 0), out.length);
      assert.equal(huffman(out.toString('hex')), text);
    }), RUNS.huffman);
  });
});

describe('HPACK: RFC 7541 Appendix C', () => {
  it('decodes C.2.1 to C.2.4, one representation each', () => {
    const examples = [
      { hex: '400a637573746f6d2d6b65790d637573746f6d2d686561646572', fields: ['custom-key', 'custom-header'], table: [['custom-key', 'custom-header']], size: 55 },
      { hex: '040c2f73616d706c652f70617468', fields: [':path', '/sample/path'], table: [], size: 0 },
      { hex: '100870617373776f726406736563726574', fields: ['password', 'secret'], table: [], size: 0 },
      { hex: '82', fields: [':method', 'GET'], table: [], size: 0 }
    ];
    for (const example of examples) decodeSeries(new HpackDecoder(), [example]);
  });

  for (const [name, blocks, size] of [['C.3', C3, 4096], ['C.4', C4, 4096], ['C.5', C5, 256], ['C.6', C6, 256]]) {
    it(`decodes ${name}'s blocks on one connection, with its dynamic table after each`, () => {
      decodeSeries(new HpackDecoder(size), blocks);
    });
  }

  it('encodes C.3 (without Huffman) and C.4 (with) to the RFC\'s bytes', () => {
    for (const [blocks, huffmanOn] of [[C3, false], [C4, true]]) {
      const encoder = new HpackEncoder();
      encoder.huffman = huffmanOn;
      for (const block of blocks) {
        assert.equal(encoder.encode(block.fields).toString('hex'), block.hex);
        assert.deepEqual(entries(encoder.table), block.table);
      }
    }
  });

  it('encodes C.5 and C.6 at 256 octets to the RFC\'s bytes when every field is indexed, after a size update', () => {
    class IndexEverything extends HpackEncoder {
      indexing() {
        return HpackEncoder.INDEXED;
      }
    }
    for (const [blocks, huffmanOn] of [[C5, false], [C6, true]]) {
      const encoder = new IndexEverything(256);
      encoder.huffman = huffmanOn;
      const decoder = new HpackDecoder();
      blocks.forEach((block, i) => {
        const encoded = encoder.encode(block.fields);
        // 256 below 4096 is announced first: 001 11111, then 256 - 31 = 225 as e1 01.
        const expected = (i === 0 ? '3fe101' : '') +
          // "307" Huffman-coded takes 3 octets as raw does: sent raw (C.6.2 codes it).
          (block.hex === '4883640effc1c0bf' ? '4803333037c1c0bf' : block.hex);
        assert.equal(encoded.toString('hex'), expected);
        assert.deepEqual(decoder.decode(encoded), block.fields);
        assert.deepEqual(entries(encoder.table), block.table);
        assert.deepEqual(entries(decoder.table), block.table);
        assert.equal(encoder.table.size, block.size);
      });
    }
  });

  it('keeps per-response values and secrets out of the table by default', () => {
    const encoder = new HpackEncoder();
    const block = encoder.encode([':status', '302', 'location', '/next', 'content-length', '12', 'set-cookie', 'a=b', 'server', 'lila']);
    // :status indexed on its static name (8), location (46) and content-length (28) without
    // indexing, set-cookie (55) never indexed, server (54) indexed; Huffman where shorter.
    assert.equal(block.toString('hex'), '48826402' + '0f1f8462a2f94f' + '0f0d023132' + '1f2803613d62' + '7683a0d40f');
    assert.deepEqual(entries(encoder.table), [['server', 'lila'], [':status', '302']]);
    const fields = new HpackDecoder().decode(block);
    assert.deepEqual(fields, [':status', '302', 'location', '/next', 'content-length', '12', 'set-cookie', 'a=b', 'server', 'lila']);
    // The second response: what repeats is one octet each.
    assert.equal(encoder.encode([':status', '302', 'server', 'lila']).toString('hex'), 'bfbe');
  });
});

describe('HPACK: the encoder\'s table size', () => {
  it('announces the smallest size and then the final one when the peer\'s limit changed twice between blocks', () => {
    const encoder = new HpackEncoder();
    const decoder = new HpackDecoder();
    decoder.decode(encoder.encode(['server', 'lila']));
    encoder.setMaxTableSize(0);
    encoder.setMaxTableSize(65536);
    // 0, then 4096 (the encoder's own maximum): 001 00000, then 001 11111 e1 1f; the entry is gone.
    const block = encoder.encode(['server', 'lila']);
    assert.equal(block.toString('hex'), '20' + '3fe11f' + '7683a0d40f');
    assert.deepEqual(decoder.decode(block), ['server', 'lila']);
    encoder.setMaxTableSize(4096);
    assert.equal(encoder.encode(['server', 'lila']).toString('hex'), 'be', 'no update when nothing changed');
    encoder.setMaxTableSize(100);
    assert.equal(encoder.encode(['server', 'lila']).toString('hex'), '3f45' + 'be', 'the entry fits 100 octets still');
  });

  it('indexes nothing at a table size of 0, and nothing that would take most of the table', () => {
    const none = new HpackEncoder(0);
    // Size 0 announced, then server (54) without indexing: 0000 1111, 54 - 15 = 39.
    assert.equal(none.encode(['server', 'lila']).toString('hex'), '20' + '0f27' + '83a0d40f');
    assert.equal(none.table.count, 0);
    const small = new HpackEncoder(100);
    small.encode(['x-a', 'a'.repeat(60), 'x-b', 'b']);
    assert.deepEqual(entries(small.table), [['x-b', 'b']]);
  });
});

describe('HPACK: malformed blocks and limits', () => {
  const refusals = {
    'index 0': '80',
    'an index past the tables': 'be',
    'a name index past the tables': '7e0161',
    'an integer past 2^31 - 1': 'ff80808080' + '08',
    'an integer longer than 5 continuation octets': 'ff8080808080' + '00',
    'an integer cut short': 'ff80',
    'a string past the end': '400a6375',
    'a string cut short before its length': '40',
    'a size update above the limit': '3fe21f',
    'a size update after a field': '823f01',
    'EOS in a string': '4085fffffffc00' + '00',
    'padding past 7 bits': '01' + '81ff'
  };
  for (const [what, hex] of Object.entries(refusals)) {
    it(`refuses ${what}`, () => {
      assert.throws(() => new HpackDecoder().decode(Buffer.from(hex, 'hex')), (err) => err instanceof HpackError && err.code === 'COMPRESSION_ERROR' && !err.listSize);
    });
  }

  it('takes several size updates at a block\'s start, and owes one after our limit goes down', () => {
    const decoder = new HpackDecoder();
    decoder.decode(Buffer.from('4001610162', 'hex'));
    decoder.decode(Buffer.from('203fe11f', 'hex'));
    assert.equal(decoder.table.maxSize, 4096);
    assert.equal(decoder.table.count, 0, 'the update to 0 emptied the table');
    decoder.decode(Buffer.from('40016101624001620163', 'hex'));
    decoder.setMaxTableSize(40);
    assert.deepEqual(entries(decoder.table), [['b', 'c']], 'the table shrank to the new limit at once');
    assert.throws(() => decoder.decode(Buffer.from('82', 'hex')), /must begin with a table size update/);
    assert.throws(() => decoder.decode(Buffer.from('3f0a82', 'hex')), /above the limit 40/);
    assert.deepEqual(decoder.decode(Buffer.from('3f0982be', 'hex')), [':method', 'GET', 'b', 'c']);
    decoder.setMaxTableSize(8192);
    assert.deepEqual(decoder.decode(Buffer.from('82', 'hex')), [':method', 'GET'], 'a higher limit owes no update');
  });

  it('decodes Huffman strings of any length, one past 64 KiB too', () => {
    const encoder = new HpackEncoder();
    const decoder = new HpackDecoder();
    for (const length of [1, 700, 5000, 120000]) {
      const fields = ['x-long', 'e'.repeat(length), 'x-next', 'a'.repeat(length >> 1)];
      const block = encoder.encode(fields);
      assert.ok(length < 700 || block.length < length, 'Huffman-coded');
      assert.deepEqual(decoder.decode(block), fields);
    }
  });

  it('reads a block past maxListSize to its end, and says so with listSize', () => {
    const decoder = new HpackDecoder();
    const encoder = new HpackEncoder();
    const fields = ['x-a', 'a'.repeat(40), 'x-b', 'b'.repeat(40)];
    assert.throws(() => decoder.decode(encoder.encode(fields), 100), (err) => err instanceof HpackError && err.listSize === true && /150 octets, above 100/.test(err.message));
    assert.deepEqual(decoder.decode(encoder.encode(fields), 150), fields, 'the tables are in step still');
  });
});

describe(`HPACK: properties (seed ${seed()})`, () => {
  const name = fc.oneof(fc.constantFrom(...STATIC_NAMES.slice(1)), fc.stringMatching(/^[a-z0-9-]{1,12}$/), fc.constantFrom('x-a', 'x-b', 'x-c'));
  const value = fc.oneof(latin1(30), fc.constantFrom('', 'GET', '200', 'gzip', 'a'.repeat(300)), latin1(2000));
  const block = fc.record({
    fields: fc.array(fc.tuple(name, value), { maxLength: 12 }).map((pairs) => pairs.flat()),
    // SETTINGS_HEADER_TABLE_SIZE changed before this block: the peer's and then ours (on its ACK).
    limits: fc.array(fc.constantFrom(0, 64, 256, 4096, 8192, 65536), { maxLength: 2 })
  });

  it(`round-trips blocks over one connection's tables, their size changing (${runs(RUNS.roundTrip)} runs)`, () => {
    check(fc.property(fc.constantFrom(0, 100, 4096, 10000), fc.array(block, { minLength: 1, maxLength: 12 }), (cap, blocks) => {
      const encoder = new HpackEncoder(cap);
      const decoder = new HpackDecoder();
      for (const { fields, limits } of blocks) {
        for (const limit of limits) encoder.setMaxTableSize(limit);
        for (const limit of limits) decoder.setMaxTableSize(limit);
        const encoded = encoder.encode(fields, Buffer.alloc(64));
        assert.deepEqual(decoder.decode(encoded), fields);
        assert.deepEqual(entries(decoder.table), entries(encoder.table));
        assert.ok(encoder.table.size <= Math.min(cap, decoder.limit));
      }
    }), RUNS.roundTrip);
  });

  it(`reads any bytes as fields or refuses them with an HpackError, never looping (${runs(RUNS.bytes)} runs)`, () => {
    const start = new HpackEncoder().encode(['x-a', 'one', 'x-b', 'two', ':authority', 'example.com']);
    check(fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { minLength: 1, maxLength: 4 }), (chunks) => {
      const decoder = new HpackDecoder();
      decoder.decode(start);
      for (const bytes of chunks) {
        try {
          const fields = withinTime(() => decoder.decode(Buffer.from(bytes)));
          assert.ok(fields.every((text) => typeof text === 'string'));
        } catch (err) {
          assert.ok(err instanceof HpackError, err.stack);
          return;
        }
      }
    }), RUNS.bytes);
  });
});

describe('HPACK against Node\'s http2 client (nghttp2)', () => {
  afterEach(cleanup);

  const variants = [
    { title: 'at 4096 octets both ways' },
    // Ours shrinks once the client acknowledges it (its next block must begin with an update);
    // the client's applies to our next response block.
    { title: 'at 256 octets ours and 100 the client\'s', ours: 256, clients: 100 }
  ];
  for (const { title, ours, clients } of variants) {
    it(`decodes its request blocks over one connection, and it reads our response blocks, ${title}`, async () => {
      const peer = await rawPeer(ours);
      const authority = `127.0.0.1:${peer.port}`;
      const client = http2.connect(`http://${authority}`, clients === undefined ? {} : { settings: { headerTableSize: clients } });
      client.on('error', () => {});
      onCleanup(() => client.destroy());

      const sent = [
        { ':path': '/one?q=1', 'x-custom': 'latin1: Ünïcödé', 'user-agent': 'hpack-test/1', accept: '*/*' },
        { ':path': '/two', 'x-custom': 'latin1: Ünïcödé', 'user-agent': 'hpack-test/1', accept: '*/*' },
        { ':method': 'POST', ':path': '/three', 'x-custom': 'another value', 'user-agent': 'hpack-test/1', 'x-long': 'z'.repeat(500) },
        { ':path': '/four', 'x-custom': 'latin1: Ünïcödé', 'user-agent': 'hpack-test/1', accept: '*/*' }
      ];
      const answers = [];
      for (const headers of sent) {
        const request = client.request(headers, { endStream: true });
        request.on('error', () => {});
        answers.push(await new Promise((resolve, reject) => {
          request.on('response', resolve);
          request.on('close', () => reject(new Error('closed before its response')));
        }));
      }

      assert.equal(peer.requests.length, sent.length);
      peer.requests.forEach(({ fields }, i) => {
        const got = {};
        for (let j = 0; j < fields.length; j += 2) got[fields[j]] = fields[j + 1];
        const { ':method': method = 'GET', ...rest } = sent[i];
        // Node sends an http2 header value's characters as latin1 octets (all below 256 here).
        assert.deepEqual(got, { ':method': method, ':scheme': 'http', ':authority': authority, ...rest });
      });
      assert.ok(peer.requests[1].block.length < peer.requests[0].block.length / 2, 'the second request indexes what the first added');
      answers.forEach((headers, i) => {
        assert.equal(headers[':status'], i === 0 ? 200 : 201);
        assert.equal(headers.server, 'lila');
        assert.equal(headers['x-seen'], String(i + 1));
        assert.equal(headers['content-type'], 'text/plain; charset=utf-8');
      });
      if (ours !== undefined) {
        assert.equal(peer.decoder.table.maxSize, ours);
        assert.ok(peer.requests.some(({ block }) => (block[0] & 0xe0) === 0x20), 'the client announced its smaller table');
      }
      if (clients !== undefined) assert.equal(peer.encoder.table.maxSize, clients);
    });
  }
});

// An h2 server of the test's own on a raw socket: its SETTINGS (HEADER_TABLE_SIZE `ours` if
// given), an ACK of the client's, each HEADERS frame's block decoded, and a response to it.
async function rawPeer(ours) {
  const decoder = new HpackDecoder();
  const encoder = new HpackEncoder();
  const requests = [];
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    onCleanup(() => socket.destroy());
    const settings = Buffer.alloc(ours === undefined ? 0 : 6);
    if (ours !== undefined) {
      settings.writeUInt16BE(1, 0);
      settings.writeUInt32BE(ours, 2);
    }
    socket.write(frame(4, 0, 0, settings));
    let pending = Buffer.alloc(0);
    let prefaceRead = false;
    socket.on('data', (data) => {
      pending = Buffer.concat([pending, data]);
      if (!prefaceRead) {
        if (pending.length < 24) return;
        assert.equal(pending.latin1Slice(0, 24), 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
        pending = pending.subarray(24);
        prefaceRead = true;
      }
      while (pending.length >= 9 && pending.length >= 9 + pending.readUIntBE(0, 3)) {
        const length = pending.readUIntBE(0, 3);
        const [type, flags] = [pending[3], pending[4]];
        const streamId = pending.readUInt32BE(5) & 0x7fffffff;
        const payload = pending.subarray(9, 9 + length);
        pending = pending.subarray(9 + length);
        if (type === 4) settingsFrame(flags, payload);
        if (type !== 1) continue;
        assert.equal(flags & 0x4, 0x4, 'END_HEADERS: these blocks fit one frame');
        let block = payload;
        if (flags & 0x8) block = block.subarray(1, block.length - block[0]);
        if (flags & 0x20) block = block.subarray(5);
        requests.push({ block, fields: decoder.decode(block) });
        const response = encoder.encode([':status', requests.length === 1 ? '200' : '201', 'server', 'lila', 'x-seen', String(requests.length), 'content-type', 'text/plain; charset=utf-8']);
        socket.write(frame(1, 0x5, streamId, response));
      }
    });

    function settingsFrame(flags, payload) {
      if (flags & 1) {
        if (ours !== undefined) decoder.setMaxTableSize(ours);
        return;
      }
      for (let offset = 0; offset < payload.length; offset += 6) {
        if (payload.readUInt16BE(offset) === 1) encoder.setMaxTableSize(payload.readUInt32BE(offset + 2));
      }
      socket.write(frame(4, 1, 0, Buffer.alloc(0)));
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(() => new Promise((resolve) => server.close(resolve)));
  return { port: server.address().port, decoder, encoder, requests };
}

function decodeSeries(decoder, blocks) {
  for (const block of blocks) {
    assert.deepEqual(decoder.decode(Buffer.from(block.hex, 'hex')), block.fields);
    assert.deepEqual(entries(decoder.table), block.table);
    assert.equal(decoder.table.size, block.size);
  }
}

function entries(table) {
  const list = [];
  for (let i = 0; i < table.count; i++) list.push([table.name(i), table.value(i)]);
  return list;
}

function huffman(hex) {
  const input = Buffer.from(hex, 'hex');
  const out = Buffer.alloc(Math.ceil((input.length * 8) / 5));
  const n = decodeHuffman(input, 0, input.length, out);
  return n < 0 ? null : out.latin1Slice(0, n);
}

function latin1(maxLength) {
  return fc.array(fc.integer({ min: 0, max: 255 }), { maxLength }).map((codes) => String.fromCharCode(...codes));
}

function frame(type, flags, streamId, payload) {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}
