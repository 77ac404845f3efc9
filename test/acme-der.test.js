'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const tls = require('node:tls');
const { execFileSync, spawnSync } = require('node:child_process');
const { once } = require('node:events');
const fc = require('fast-check');
const der = require('../lib/acme/der');
const { createCsr, extension } = require('../lib/acme/csr');
const { alpnCertificate, selfSignedCertificate } = require('../lib/acme/alpn-certificate');
const { certificateId } = require('../lib/acme/certificate-id');
const { Pki } = require('./pki');
const { check, runs, seed } = require('./property-run');

const RUNS = { roundTrip: 200, truncated: 200 };
const ACME_IDENTIFIER = '1.3.6.1.5.5.7.1.31';
const KEYS = {
  ec: () => crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey,
  rsa: () => crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
};
const FIFTY_NAMES = Array.from({ length: 50 }, (_, i) => `host-${i}.example.com`);
// Cleanup steps of the test running, newest first.
const cleanups = [];

describe('DER', () => {
  describe('lengths, written and read back', () => {
    const table = [
      { size: 0, header: '0400' },
      { size: 127, header: '047f' },
      { size: 128, header: '048180' },
      { size: 255, header: '0481ff' },
      { size: 256, header: '04820100' },
      { size: 65535, header: '0482ffff' },
      { size: 65536, header: '0483010000' }
    ];
    for (const { size, header } of table) {
      it(`heads ${size} bytes of contents with ${header}`, () => {
        const contents = crypto.randomBytes(size);
        const encoded = der.octetString(contents);
        const headerLength = header.length / 2;

        assert.equal(encoded.subarray(0, headerLength).toString('hex'), header);
        assert.equal(encoded.length, headerLength + size);
        assert.deepEqual(der.readDer(encoded, 0), { tag: 0x04, offset: 0, start: headerLength, end: encoded.length, next: encoded.length });
        assert.ok(encoded.subarray(headerLength).equals(contents));
      });
    }
  });

  describe('INTEGER', () => {
    const table = [
      { value: Buffer.from([]), expected: '020100' },
      { value: Buffer.from([0]), expected: '020100' },
      { value: Buffer.from([0, 0, 0]), expected: '020100' },
      { value: Buffer.from([0x7f]), expected: '02017f' },
      { value: Buffer.from([0x80]), expected: '02020080' },
      { value: Buffer.from([0, 0, 0x01]), expected: '020101' },
      { value: Buffer.from([0, 0, 0x80, 0x01]), expected: '0203008001' },
      { value: Buffer.from([0x00, 0x7f, 0xff]), expected: '02027fff' },
      { value: Buffer.from('ffffffffffffffffffffffffffffffff', 'hex'), expected: '021100ffffffffffffffffffffffffffffffff' },
      { value: 0, expected: '020100' },
      { value: 2, expected: '020102' },
      { value: 127, expected: '02017f' },
      { value: 128, expected: '02020080' },
      { value: 256, expected: '02020100' },
      { value: 65535, expected: '020300ffff' },
      { value: 2 ** 32, expected: '02050100000000' }
    ];
    for (const { value, expected } of table) {
      const label = Buffer.isBuffer(value) ? `bytes ${value.toString('hex') || '(none)'}` : `the number ${value}`;
      it(`encodes ${label} as ${expected}`, () => {
        assert.equal(der.integer(value).toString('hex'), expected);
      });
    }

    it('refuses negative, fractional and unsafe numbers', () => {
      for (const value of [-1, 1.5, 2 ** 53, NaN, '1']) assert.throws(() => der.integer(value), TypeError);
    });
  });

  describe('the other writers', () => {
    const table = [
      ['an OID of RFC 2985', () => der.oid('1.2.840.113549.1.9.14'), '06092a864886f70d01090e'],
      ['an OID of RFC 5280', () => der.oid('2.5.29.17'), '0603551d11'],
      ['an OID with a big first pair', () => der.oid('2.999.3'), '0603883703'],
      ['NULL', () => der.nullValue(), '0500'],
      ['true', () => der.boolean(true), '0101ff'],
      ['false', () => der.boolean(false), '010100'],
      ['a BIT STRING', () => der.bitString(Buffer.from([0xab])), '030200ab'],
      ['a UTF8String', () => der.utf8String('é'), '0c02c3a9'],
      ['a PrintableString', () => der.printableString('A b'), '1303412062'],
      ['an IA5String', () => der.ia5String('a.b'), '1603612e62'],
      ['a SEQUENCE', () => der.sequence(der.nullValue(), der.boolean(true)), '300505000101ff'],
      ['a SET, sorted', () => der.set(der.integer(2), der.integer(1)), '3106020101020102'],
      ['[0] EXPLICIT INTEGER 2', () => der.explicit(0, der.integer(2)), 'a003020102'],
      ['[2] IMPLICIT IA5String', () => der.implicit(2, der.ia5String('a')), '820161'],
      ['[0] IMPLICIT SET, constructed', () => der.implicit(0, der.set(der.nullValue())), 'a0020500'],
      ['UTCTime in 2049', () => der.time(new Date('2049-12-31T23:59:59.999Z')), `170d${hex('491231235959Z')}`],
      ['UTCTime in 1950', () => der.time(new Date('1950-01-01T00:00:00Z')), `170d${hex('500101000000Z')}`],
      ['GeneralizedTime in 2050', () => der.time(new Date('2050-01-01T00:00:00Z')), `180f${hex('20500101000000Z')}`],
      ['GeneralizedTime in 1949', () => der.time(new Date('1949-12-31T23:59:59Z')), `180f${hex('19491231235959Z')}`]
    ];
    for (const [what, write, expected] of table) {
      it(`writes ${what} as ${expected}`, () => {
        assert.equal(write().toString('hex'), expected);
      });
    }

    it('refuses what the types cannot hold', () => {
      assert.throws(() => der.oid('1'), TypeError);
      assert.throws(() => der.oid('1.40'), TypeError);
      assert.throws(() => der.oid('3.1'), TypeError);
      assert.throws(() => der.oid('1.2.x'), TypeError);
      assert.throws(() => der.printableString('a@b'), TypeError);
      assert.throws(() => der.ia5String('é'), TypeError);
      assert.throws(() => der.time(new Date(NaN)), TypeError);
      assert.throws(() => der.explicit(31, der.nullValue()), TypeError);
    });
  });

  describe('readDer', () => {
    it('walks the children of a SEQUENCE, each within its parent', () => {
      const encoded = Buffer.concat([der.sequence(der.integer(1), der.octetString(Buffer.alloc(200)), der.sequence()), der.nullValue()]);
      const outer = der.readDer(encoded, 0);
      const children = der.readChildren(encoded, outer);

      assert.deepEqual(children.map((child) => child.tag), [0x02, 0x04, 0x30]);
      assert.deepEqual(children.map((child) => child.end - child.start), [1, 200, 0]);
      assert.equal(children[2].next, outer.end);
      assert.equal(der.readDer(encoded, outer.next).tag, 0x05);
    });

    const bad = [
      ['an empty buffer', '', /cut short/],
      ['a tag without a length', '04', /cut short/],
      ['contents cut short', '040301', /cut short/],
      ['length bytes cut short', '048201', /cut short/],
      ['an indefinite length', '0480', /indefinite/],
      ['a long form for a short length', '0481050102030405', /more bytes than it needs/],
      ['a length with a leading zero byte', '0482008001', /more bytes than it needs/],
      ['five length bytes', '04850000000001', /over 4/],
      ['a multi-byte tag', '1f0100', /multi-byte tag/]
    ];
    for (const [what, text, message] of bad) {
      it(`rejects ${what}`, () => {
        assert.throws(() => der.readDer(Buffer.from(text, 'hex'), 0), message);
      });
    }

    it('rejects a child that runs past its parent', () => {
      const encoded = Buffer.from('3003040500000000000000', 'hex');
      assert.throws(() => der.readChildren(encoded, der.readDer(encoded, 0)), /cut short/);
    });
  });

  describe(`as properties (seed ${seed()})`, () => {
    const contents = fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.uint8Array({ maxLength: 70000, size: 'max' }));

    it(`reads back any OCTET STRING it writes, after any prefix (${runs(RUNS.roundTrip)} runs)`, () => {
      check(fc.property(fc.uint8Array({ maxLength: 8 }), contents, (prefix, bytes) => {
        const encoded = Buffer.concat([Buffer.from(prefix), der.octetString(Buffer.from(bytes)), der.nullValue()]);
        const element = der.readDer(encoded, prefix.length);

        assert.equal(element.tag, 0x04);
        assert.ok(encoded.subarray(element.start, element.end).equals(Buffer.from(bytes)));
        assert.equal(element.next, encoded.length - 2);
      }), RUNS.roundTrip);
    });

    it(`rejects every OCTET STRING it writes cut anywhere short (${runs(RUNS.truncated)} runs)`, () => {
      const cut = contents.chain((bytes) => fc.tuple(fc.constant(bytes), fc.nat({ max: bytes.length + 3 })));
      check(fc.property(cut, ([bytes, keep]) => {
        const encoded = der.octetString(Buffer.from(bytes));
        fc.pre(keep < encoded.length);
        assert.throws(() => der.readDer(encoded.subarray(0, keep), 0), Error);
      }), RUNS.truncated);
    });
  });
});

describe('createCsr', () => {
  for (const keyType of ['ec', 'rsa']) {
    for (const names of [['example.com'], FIFTY_NAMES]) {
      it(`gives openssl a request it verifies, with a ${keyType} key and ${names.length} name(s)`, () => {
        const text = opensslReq(createCsr(names, KEYS[keyType]()));

        assert.match(text, /verify OK/);
        assert.match(text, new RegExp(`Subject: CN ?= ?${escape(names[0])}\\n`));
        assert.deepEqual(dnsNames(text), names);
        assert.match(text, keyType === 'ec' ? /Signature Algorithm: ecdsa-with-SHA256/ : /Signature Algorithm: sha256WithRSAEncryption/);
      });
    }
  }

  it('leaves the subject empty for a first name over 64 characters, and keeps it in subjectAltName', () => {
    const long = `${'a'.repeat(60)}.example.com`;
    const text = opensslReq(createCsr([long, 'example.com', '*.example.com'], KEYS.ec()));

    assert.match(text, /verify OK/);
    assert.match(text, /Subject: *\n/);
    assert.deepEqual(dnsNames(text), [long, 'example.com', '*.example.com']);
  });

  it('refuses no names, names that are not lower-case hostnames, and other keys', () => {
    const key = KEYS.ec();
    const badNames = [[], 'example.com', ['Example.com'], ['a..b'], ['-a.example'], ['a-.example'], ['a_b.example'],
      ['127.0.0.1'], ['example.com.'], [`${'a'.repeat(64)}.example`], [`${'a.'.repeat(127)}a`], ['*.com'], ['a.*.example'], ['']];
    for (const names of badNames) assert.throws(() => createCsr(names, key), TypeError, JSON.stringify(names));
    for (const other of [crypto.generateKeyPairSync('ed25519').privateKey,
      crypto.generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey, crypto.createPublicKey(key)]) {
      assert.throws(() => createCsr(['example.com'], other), TypeError);
    }
  });
});

describe('alpnCertificate', () => {
  afterEach(cleanup);

  const keyAuthorization = 'evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.nP1qzpXGymHBrUEepNY9HCsQk7K8KhOypzEt62jcerQ';
  const digest = crypto.createHash('sha256').update(keyAuthorization).digest();

  it('gives openssl a certificate with the critical acmeIdentifier holding the digest, and the name', () => {
    const { cert } = alpnCertificate('a.example.com', keyAuthorization);
    const text = opensslX509(cert);

    assert.match(text, /Version: 3 \(0x2\)/);
    assert.match(text, /Subject: CN ?= ?a\.example\.com\n/);
    assert.match(text, /Issuer: CN ?= ?a\.example\.com\n/);
    assert.deepEqual(dnsNames(text), ['a.example.com']);
    assert.ok(extensionDump(text, `${ACME_IDENTIFIER}: critical`).equals(Buffer.concat([Buffer.from([0x04, 0x20]), digest])));
  });

  it('gives node a self-signed certificate for its key, valid from an hour ago for 7 days', () => {
    const { cert, key } = alpnCertificate('a.example.com', keyAuthorization);
    const x509 = new crypto.X509Certificate(cert);
    const now = Date.now();

    assert.equal(x509.subjectAltName, 'DNS:a.example.com');
    assert.equal(x509.subject, 'CN=a.example.com');
    assert.ok(x509.checkPrivateKey(crypto.createPrivateKey(key)));
    assert.ok(x509.verify(x509.publicKey));
    assert.equal(x509.publicKey.asymmetricKeyDetails.namedCurve, 'prime256v1');
    assert.ok(Math.abs(Date.parse(x509.validFrom) - (now - 3600e3)) < 5000, x509.validFrom);
    assert.ok(Math.abs(Date.parse(x509.validTo) - (now + 7 * 86400e3)) < 5000, x509.validTo);
    // Positive, 16 bytes: 32 hex digits, the first below 8.
    assert.match(x509.serialNumber, /^[0-7][0-9A-F]{31}$/);
  });

  it('makes a fresh key and serial each call', () => {
    const first = alpnCertificate('a.example.com', keyAuthorization);
    const second = alpnCertificate('a.example.com', keyAuthorization);

    assert.notEqual(first.key, second.key);
    assert.notEqual(new crypto.X509Certificate(first.cert).serialNumber, new crypto.X509Certificate(second.cert).serialNumber);
  });

  it('leaves subject and issuer empty for a name over 64 characters, its subjectAltName critical', () => {
    const long = `${'b'.repeat(60)}.example.com`;
    const { cert, key } = alpnCertificate(long, keyAuthorization);
    const x509 = new crypto.X509Certificate(cert);
    const text = opensslX509(cert);

    assert.equal(x509.subjectAltName, `DNS:${long}`);
    assert.match(text, /Subject: *\n/);
    assert.match(text, /X509v3 Subject Alternative Name: critical/);
    assert.ok(x509.checkPrivateKey(crypto.createPrivateKey(key)));
    assert.ok(x509.verify(x509.publicKey));
  });

  it('refuses a wildcard and a name that is not a hostname', () => {
    for (const name of ['*.example.com', 'Example.com', 'a b', '']) {
      assert.throws(() => alpnCertificate(name, keyAuthorization), TypeError, name);
    }
  });

  it('serves a TLS handshake on acme-tls/1, the extension in the peer certificate', async () => {
    const { cert, key } = alpnCertificate('a.example.com', keyAuthorization);
    tls.createSecureContext({ cert, key });
    const server = tls.createServer({ cert, key, ALPNProtocols: ['acme-tls/1'] }, (socket) => {
      socket.on('error', () => {}); // the client may reset first: nothing to check here
      socket.end();
    });
    cleanups.unshift(() => new Promise((resolve) => server.close(resolve)));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');

    const client = tls.connect({
      port: server.address().port,
      host: '127.0.0.1',
      servername: 'a.example.com',
      ALPNProtocols: ['acme-tls/1'],
      rejectUnauthorized: false
    });
    cleanups.unshift(() => client.destroy());
    await once(client, 'secureConnect');

    assert.equal(client.alpnProtocol, 'acme-tls/1');
    const raw = client.getPeerCertificate().raw;
    const expected = Buffer.concat([der.oid(ACME_IDENTIFIER), der.boolean(true), der.octetString(der.octetString(digest))]);
    assert.ok(raw.includes(expected), 'the acmeIdentifier extension, critical, in the certificate served');
    assert.ok(raw.equals(new crypto.X509Certificate(cert).raw));
  });
});

describe('certificateId', () => {
  let pki;
  before(() => {
    pki = new Pki();
  });
  after(() => pki.remove());

  for (const [what, serial] of [['a small serial', undefined], ['a serial with its high bit set', 0xfeff]]) {
    it(`matches what openssl shows of a CA-signed certificate with ${what}`, () => {
      if (serial !== undefined) pki.serial = serial;
      const { cert } = pki.issue({ names: ['a.example'] });
      const text = opensslX509(cert);
      const aki = /Authority Key Identifier: *\n\s*(?:keyid:)?([0-9A-F:]+)/.exec(text)[1];
      const serialHex = /Serial Number: \d+ \(0x([0-9a-f]+)\)/.exec(text)[1];
      const serialBytes = Buffer.from(serialHex.padStart(serialHex.length + (serialHex.length % 2), '0'), 'hex');
      // DER keeps an INTEGER positive with a 0x00 before a high bit.
      const content = serialBytes[0] & 0x80 ? Buffer.concat([Buffer.from([0]), serialBytes]) : serialBytes;
      const expected = `${Buffer.from(aki.replace(/:/g, ''), 'hex').toString('base64url')}.${content.toString('base64url')}`;

      assert.equal(certificateId(cert), expected);
      assert.doesNotMatch(expected, /[=+/]/);
      if (serial !== undefined) assert.match(expected, /\.AP8A$/);
    });
  }

  it("gives RFC 9773's example identifier", () => {
    const keyIdentifier = Buffer.from('69885B6B87464041E1B37B847BA0AE2CDE01C8D4', 'hex');
    const cert = selfSignedCertificate({
      names: ['example.com'],
      key: KEYS.ec(),
      serial: Buffer.from('87654321', 'hex'),
      extensions: [extension('2.5.29.35', der.sequence(der.implicit(0, der.octetString(keyIdentifier))))]
    });

    assert.equal(certificateId(cert), 'aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE');
  });

  it('gives null for a certificate without an Authority Key Identifier', () => {
    assert.equal(certificateId(alpnCertificate('a.example.com', 'x.y').cert), null);
  });
});

async function cleanup() {
  while (cleanups.length > 0) await cleanups.shift()();
}

function hex(text) {
  return Buffer.from(text, 'latin1').toString('hex');
}

function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// openssl's text and its verdict, which it writes to stderr.
function opensslReq(csr) {
  const result = spawnSync('openssl', ['req', '-inform', 'DER', '-noout', '-text', '-verify'], { input: csr, encoding: 'latin1' });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout + result.stderr;
}

function opensslX509(pem) {
  // ext_dump shows an extension openssl has no name for as a hex dump.
  return execFileSync('openssl', ['x509', '-noout', '-text', '-certopt', 'ext_dump'], { input: pem, encoding: 'latin1' });
}

function dnsNames(text) {
  const line = /Subject Alternative Name:[^\n]*\n\s*([^\n]+)/.exec(text)[1];
  return line.split(/,\s*/).map((entry) => entry.replace(/^DNS:/, ''));
}

// The bytes of an extension's hex dump, from the lines after its heading.
function extensionDump(text, heading) {
  const after = text.slice(text.indexOf(heading) + heading.length).split('\n').slice(1);
  const bytes = [];
  for (const line of after) {
    const row = /^\s*[0-9a-f]{4} - ((?:[0-9a-f]{2}[ -])+)/.exec(line);
    if (row === null) break;
    bytes.push(...row[1].match(/[0-9a-f]{2}/g).map((byte) => parseInt(byte, 16)));
  }
  return Buffer.from(bytes);
}
