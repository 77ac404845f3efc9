'use strict';

const assert = require('node:assert/strict');
const fc = require('fast-check');
const { parseRequestHead, requestLineProblem } = require('../lib/http/wire/head-parser');
const ChunkedScanner = require('../lib/http/wire/chunked-scanner');
const { requestStream, chunkedBody, cuts, split } = require('./generators');
const { lilaReads, nodeReads } = require('./parser-harness');
const { check, runs, seed, withinTime } = require('./property-run');

// Small, so that heads past it stay cheap to make; the generators go far past it or stay far below.
const LIMITS = { maxHeaderSize: 4096 };

/*
 * Where lila's fast engine and Node's parser (llhttp) may differ, by the tag
 * the generators put on a message (test/generators.js), with RFC 9112's (or
 * RFC 9110's) reason. A message without tags must be read the same by both:
 * method, target, version, fields as sent, body bytes, trailers; and so must
 * one whose tags are not listed here.
 */

// lila refuses these (400, 431, 414 or 501) whatever llhttp does.
const LILA_REFUSES = {
  'invalid-method': 'RFC 9112 §3: the method is a token (RFC 9110 §9.1); an invalid request-line gets 400',
  'request-line-whitespace': 'RFC 9112 §3: one SP between the parts of a request-line; a recipient MAY split on other whitespace, lila does not (nor llhttp)',
  'invalid-target': 'RFC 9112 §3.2: the request-target is not empty',
  'target-control': 'RFC 9112 §3.2: no whitespace or control byte in a request-target (RFC 3986)',
  'huge-target': 'RFC 9112 §3: a request-target longer than the server will parse: 414 (431 until lila counts the request line alone)',
  'huge-head': 'RFC 6585 §5: header fields larger than the server will process: 431',
  'invalid-version': 'RFC 9112 §2.3: HTTP-version is "HTTP/" DIGIT "." DIGIT, case-sensitive',
  'other-version': 'RFC 9110 §6.2, §15.6.6: lila serves HTTP/1.x only; another major version is refused',
  'bare-lf': 'RFC 9112 §2.2: a recipient MAY take a bare LF as a line end; lila does not (nor llhttp): line ends parsers disagree on smuggle requests',
  'bare-cr': 'RFC 9112 §2.2: a bare CR MUST be taken as invalid or replaced with SP; lila takes it as invalid',
  'obs-fold': 'RFC 9112 §5.2: a server MUST reject obs-fold with 400 or replace it with SP; lila rejects it',
  'control-in-value': 'RFC 9110 §5.5: a control byte makes a field value invalid (a recipient MAY keep it); lila refuses it',
  'nul-in-value': 'RFC 9110 §5.5: NUL in a field value MUST be rejected or replaced with SP; lila rejects it',
  'invalid-field-name': 'RFC 9110 §5.1: a field name is a token',
  'space-before-colon': 'RFC 9112 §5.1: whitespace between a field name and its colon MUST get 400',
  'no-host': 'RFC 9112 §3.2: an HTTP/1.1 request without Host MUST get 400 (Node answers it so too, from its server, not its parser)',
  'several-hosts': 'RFC 9112 §3.2: a request with more than one Host MUST get 400',
  'invalid-host': 'RFC 9112 §3.2: a request whose Host is not a valid host MUST get 400',
  'invalid-content-length': 'RFC 9112 §6.3 (5): an invalid Content-Length MUST get 400',
  'content-length-list': 'RFC 9110 §8.6: a list of equal Content-Length values MAY be rejected or taken as one; lila rejects it',
  'several-content-lengths': 'RFC 9110 §8.6: several equal Content-Length fields MAY be rejected or taken as one; lila rejects them',
  'long-content-length': 'RFC 9110 §8.6: a recipient MUST prevent overflow on large numerals; lila refuses a Content-Length of more than 15 digits',
  'te-http10': 'RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 request means its framing is faulty',
  'te-not-chunked-last': 'RFC 9112 §6.3 (4): a request whose last transfer coding is not chunked MUST get 400',
  'te-other-coding': 'RFC 9112 §6.1: a transfer coding the server does not understand SHOULD get 501',
  'te-chunked-twice': 'RFC 9112 §7: chunked MUST NOT be applied more than once',
  'te-and-cl': 'RFC 9112 §6.3 (3): a server MAY reject a request with both Transfer-Encoding and Content-Length; lila does',
  'chunk-size-whitespace': 'RFC 9112 §7.1: chunk-size is 1*HEXDIG, with nothing but an extension after it',
  'chunk-size-invalid': 'RFC 9112 §7.1: chunk-size is 1*HEXDIG',
  'chunk-size-overflow': 'RFC 9112 §7.1: a recipient MUST anticipate large hexadecimal numerals and prevent overflow',
  'chunk-ext-invalid': 'RFC 9112 §7.1.1: a chunk extension is a name (a token) and an optional value (a token or a quoted-string); lila checks that (llhttp too, but lets an empty name through on Node 26)',
  'authority-form': 'RFC 9112 §3.2.3: the authority-form is for CONNECT alone',
  'asterisk-form': 'RFC 9112 §3.2.4: the asterisk-form is for OPTIONS alone',
  'chunk-ext-control': 'RFC 9112 §7.1.1: a chunk extension is tokens and quoted strings; no control byte, no bare LF',
  'chunk-data-longer': 'RFC 9112 §7.1: chunk-data is followed by CRLF',
  'chunk-data-shorter': 'RFC 9112 §7.1: chunk-data is followed by CRLF',
  'chunk-bare-lf': 'RFC 9112 §7.1: chunks and the last chunk end in CRLF; §2.2\'s leave to take a bare LF is for the start-line and fields',
  'trailer-invalid': 'RFC 9112 §7.1.2: trailer fields are field lines as in the head (RFC 9112 §5)'
};

// lila passes these on where llhttp refuses them (it is the lenient one here).
const LILA_PASSES = {
  'extension-method': 'RFC 9110 §9.1: methods are extensible tokens, and a proxy forwards one it does not know; llhttp knows a fixed list',
  'target-unsafe': 'RFC 9112 §3.2: a request-target is a URI reference (RFC 3986, which has no " < > \\ ^ ` { | } # in one), but a server SHOULD, not MUST, refuse one; lila passes it on as nginx does',
  'target-obs-text': 'as target-unsafe, for bytes over 0x7f',
  'absolute-form': 'RFC 9112 §3.2.2: a server MUST accept the absolute-form; lila may send it on in origin-form',
  'framing-trailing-tab': 'RFC 9112 §5.1: OWS (SP or HTAB) after a field value is no part of it; llhttp takes an HTAB after a Content-Length or Transfer-Encoding value as part of it, and refuses the request',
  'chunk-ext-whitespace-inside': 'RFC 9112 §7.1.1: BWS around a chunk extension\'s "=" and after its ";" is allowed (RFC 9110 §5.6.3); llhttp refuses it'
};

// Either outcome: lila's behaviour here is changing, or differs from the RFC and is reported.
const LILA_EITHER = {
  'future-minor': 'RFC 9110 §6.2: HTTP/1.2 and above SHOULD be processed as HTTP/1.1; lila does, llhttp refuses them',
  'chunk-ext-whitespace-before': 'RFC 9112 §7.1.1 allows BWS before a chunk extension\'s ";" (RFC 9110 §5.6.3: a recipient MUST parse and remove it); lila refuses it, as llhttp does: a backend on Node would not read it'
};

// Property runs in CI, with the seed printed in the titles.
const RUNS = { differential: 1500, chunked: 800, splits: 800, total: 1000, heads: 1000 };

describe(`HTTP/1.1 parsers, as properties (seed ${seed()})`, () => {
  it(`read a stream of requests as llhttp does, but where the tables of RFC reasons say (${runs(RUNS.differential)} runs)`, async () => {
    await check(fc.asyncProperty(requestStream(LIMITS), async (stream) => {
      const lila = withinTime(() => lilaReads([stream.bytes], LIMITS));
      const node = await nodeReads([stream.bytes], LIMITS);
      assert.deepEqual(differences(stream, lila, node), []);
    }), RUNS.differential);
  });

  it(`read a chunked body as llhttp does: data, trailers, and where it ends (${runs(RUNS.chunked)} runs)`, async () => {
    await check(fc.asyncProperty(chunkedBody(), fc.boolean(), async (body, pipelined) => {
      const head = 'POST /upload HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n';
      const next = pipelined ? 'GET /next HTTP/1.1\r\nHost: example.com\r\n\r\n' : '';
      const tags = body.tags.filter((tag) => tag !== 'chunk-unfinished');
      const stream = {
        messages: [{ text: head + body.text, tags }, ...(pipelined && tags.length === 0 ? [{ text: next, tags: [] }] : [])],
        cutAt: null
      };
      const bytes = Buffer.from(stream.messages.map((m) => m.text).join(''), 'latin1');
      const lila = withinTime(() => lilaReads([bytes], LIMITS));
      const node = await nodeReads([bytes], LIMITS);
      assert.deepEqual(differences(stream, lila, node), []);
      if (tags.length === 0 && !body.tags.includes('chunk-unfinished')) assert.equal(lila.requests[0].body.toString('latin1'), body.data);
    }), RUNS.chunked);
  });

  it(`read any split of a stream into reads as they read it whole (${runs(RUNS.splits)} runs)`, () => {
    const streamAndCuts = requestStream(LIMITS).chain((stream) => fc.tuple(fc.constant(stream), cuts(stream.bytes.length)));
    check(fc.property(streamAndCuts, ([stream, offsets]) => {
      const whole = withinTime(() => lilaReads([stream.bytes], LIMITS));
      const pieces = withinTime(() => lilaReads(split(stream.bytes, offsets), LIMITS));
      assert.deepEqual(comparable(pieces), comparable(whole));
    }), RUNS.splits);
  });

  it(`never throw, loop, or hand on more than they were given, on any bytes (${runs(RUNS.total)} runs)`, () => {
    const bytes = fc.oneof(
      requestStream(LIMITS).map((stream) => stream.bytes),
      fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
      fc.tuple(requestStream(LIMITS), fc.uint8Array({ minLength: 1, maxLength: 20 }), fc.nat())
        .map(([stream, noise, at]) => {
          const i = at % (stream.bytes.length + 1);
          return Buffer.concat([stream.bytes.subarray(0, i), Buffer.from(noise), stream.bytes.subarray(i)]);
        })
    );
    check(fc.property(bytes, (input) => {
      const result = withinTime(() => lilaReads([input], LIMITS));
      const handedOn = result.requests.reduce((sum, r) => sum + (r.body === null ? 0 : r.body.length), 0);
      assert.ok(handedOn + result.left <= input.length, `${handedOn} body bytes and ${result.left} left of ${input.length}`);
      for (const request of result.requests) assert.ok(input.includes(Buffer.from(request.method, 'latin1')));
    }), RUNS.total);
  });

  it(`never refuse a request line early that the whole head would not refuse, nor throw on any head (${runs(RUNS.heads)} runs)`, () => {
    const head = fc.oneof(
      requestStream(LIMITS).map((stream) => stream.bytes.toString('latin1')),
      fc.string({ unit: 'binary', maxLength: 200 })
    ).map((text) => {
      const end = text.indexOf('\r\n\r\n');
      return end === -1 ? text : text.slice(0, end);
    });
    check(fc.property(head, (text) => {
      const parsed = withinTime(() => parseRequestHead(text));
      const lineEnd = text.indexOf('\r\n');
      const early = requestLineProblem(lineEnd === -1 ? text : text.slice(0, lineEnd));
      if (parsed.problem !== null) {
        assert.ok(Number.isInteger(parsed.problem.status) && parsed.problem.status >= 400 && parsed.problem.status < 600);
        assert.equal(typeof parsed.problem.reason, 'string');
      }
      if (early !== null) assert.notEqual(parsed.problem, null, `the line alone is refused (${early.reason}), the whole head is not`);
    }), RUNS.heads);
  });

  it(`scan a chunked body the same across any reads, and never past the range they are given (${runs(RUNS.chunked)} runs)`, () => {
    const input = chunkedBody().chain((body) => {
      const bytes = Buffer.from(body.text, 'latin1');
      return fc.tuple(fc.constant(bytes), cuts(bytes.length), fc.uint8Array({ maxLength: 6 }), fc.uint8Array({ maxLength: 6 }));
    });
    check(fc.property(input, ([bytes, offsets, before, after]) => {
      const whole = withinTime(() => scanAll([bytes]));
      assert.deepEqual(withinTime(() => scanAll(split(bytes, offsets))), whole);
      // The same bytes inside a larger buffer, scanned over their range only.
      const padded = Buffer.concat([Buffer.from(before), bytes, Buffer.from(after)]);
      const scanner = new ChunkedScanner(LIMITS.maxHeaderSize);
      const data = [];
      const end = withinTime(() => scanner.scan(padded, before.length, before.length + bytes.length, (b, from, to) => {
        assert.ok(from >= before.length && to <= before.length + bytes.length, `data at [${from}, ${to})`);
        data.push(b.subarray(from, to));
      }));
      assert.deepEqual({ end: end < 0 ? end : end - before.length, data: Buffer.concat(data).toString('latin1') },
        { end: whole.end, data: whole.data });
    }), RUNS.chunked);
  });

  describe('fixed cases', () => {
    // Cases the properties found, or that the tables above name, kept as fixed cases.
    const lilaOnly = [
      ['an unknown method', 'BREW /pot HTTP/1.1\r\nHost: a\r\n\r\n', 'request'],
      ['a chunk extension with BWS around its "="', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;a = b\r\nx\r\n0\r\n\r\n', 'request'],
      ['obs-fold', 'GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n', 'refused'],
      ['a bare LF after a chunk\'s data', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\n0\r\n\r\n', 'refused'],
      ['two Host fields', 'GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n', 'refused'],
      // Found by the differential property: llhttp refuses it (the tab taken as part of "chunked").
      ['an HTAB after "chunked"', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\t\r\n\r\n1\r\nx\r\n0\r\n\r\n', 'request'],
      // Found by the differential property on Node 26, whose llhttp reads it.
      ['a chunk extension without a name', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0;=v\r\n\r\n', 'refused']
    ];
    for (const [name, text, expected] of lilaOnly) {
      it(`reads ${name}: ${expected}`, () => {
        const result = lilaReads([Buffer.from(text, 'latin1')], LIMITS);
        const outcome = result.requests.length > 0 && result.requests[0].ended ? 'request' : 'refused';
        assert.equal(outcome, expected, JSON.stringify(result.end));
      });
    }

    // The same bytes get the same answer however they are split into reads: the request line,
    // when it comes in a read before the rest of its head, is checked on its own; the whole head
    // is checked request line first, then the rest.
    const statusBySplit = [
      ['HTTP/2.0 in the line, NUL in a field', 'GET / HTTP/2.0\r\nHost: a\r\nX: \x00\r\n\r\n'],
      ['an invalid method, and a head over --max-header-size', `G"T / HTTP/1.1\r\nHost: a\r\nX: ${'v'.repeat(2 * LIMITS.maxHeaderSize)}\r\n\r\n`]
    ];
    for (const [name, text] of statusBySplit) {
      it(`answers the same status whether the request line comes alone or with its head (${name})`, () => {
        const bytes = Buffer.from(text, 'latin1');
        const lineEnd = bytes.indexOf('\r\n') + 2;
        const whole = lilaReads([bytes], LIMITS).end;
        const lineFirst = lilaReads([bytes.subarray(0, lineEnd), bytes.subarray(lineEnd)], LIMITS).end;
        assert.equal(lineFirst.refused, whole.refused);
      });
    }
  });
});

/**
 * Where lila's reading of a stream differs from llhttp's in a way the tables
 * do not allow, one line each (empty when none).
 */
function differences(stream, lila, node) {
  const problems = [];
  for (const [i, message] of stream.messages.entries()) {
    const ours = outcome(lila, i, 'lila');
    const theirs = outcome(node, i, 'node');
    const where = `message ${i + 1} ${JSON.stringify(message.text.length > 300 ? `${message.text.slice(0, 300)}...` : message.text)} (tags: ${message.tags.join(', ') || 'none'})`;
    const refuses = message.tags.filter((tag) => tag in LILA_REFUSES);
    if (refuses.length > 0) {
      // Refused, or still waiting for the rest of a head or body it will refuse (a bare CR is
      // seen once the head is whole): never read as a request.
      if (ours.kind === 'request') {
        problems.push(`${where}: lila ${describeOutcome(ours)}, but must refuse it: ${refuses.map((tag) => LILA_REFUSES[tag]).join('; ')}`);
      }
      return problems;
    }
    if (same(ours, theirs, message.tags)) {
      if (ours.kind !== 'request') return problems;
      continue;
    }
    if (message.tags.some((tag) => tag in LILA_EITHER)) return problems;
    if (message.tags.some((tag) => tag in LILA_PASSES) && ours.kind !== 'refused' && theirs.kind === 'refused') return problems;
    problems.push(`${where}: lila ${describeOutcome(ours)}, llhttp ${describeOutcome(theirs)}`);
    return problems;
  }
  return problems;
}

// What a reader made of the i-th message: a request, a refusal, too few bytes, or nothing (the stream is over).
function outcome(result, i, who) {
  const { requests, end } = result;
  const refused = who === 'lila' ? end.refused !== undefined || end.bodyFailed === true
    : end.error !== undefined && end.error !== 'HPE_INVALID_EOF_STATE' && end.error !== 'HPE_CLOSED_CONNECTION';
  if (i < requests.length) {
    const request = requests[i];
    if (request.ended && request.body !== null) return { kind: 'request', request, tunnel: i === requests.length - 1 && (end.upgrade || end.connect) === true };
    return { kind: refused ? 'refused' : 'incomplete', detail: end };
  }
  if (i > requests.length) return { kind: 'over' };
  if (refused) return { kind: 'refused', detail: end };
  // Empty lines before a request line are skipped (RFC 9112 §2.2): a CR waiting for its LF is no request yet.
  const incomplete = who === 'lila'
    ? end.incomplete !== undefined && end.incomplete !== 'done' && !(end.incomplete === 'head' && /^[\r\n]*$/.test(result.rest.toString('latin1')))
    : end.error === 'HPE_INVALID_EOF_STATE';
  return incomplete ? { kind: 'incomplete', detail: end } : { kind: 'over' };
}

function same(ours, theirs, tags) {
  if (ours.kind !== theirs.kind) return false;
  if (ours.kind !== 'request') return true;
  const a = ours.request;
  const b = theirs.request;
  // An absolute-form target may be sent on in origin-form, with its authority as the Host
  // (RFC 9112 §3.2.2: the Host received is then ignored).
  const absolute = tags.includes('absolute-form') ? /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)(.*)$/i.exec(b.url) : null;
  const url = a.url === b.url || (absolute !== null && a.url === (absolute[2].startsWith('/') ? absolute[2] : `/${absolute[2]}`));
  const fields = absolute === null
    ? JSON.stringify(a.rawHeaders) === JSON.stringify(b.rawHeaders)
    : JSON.stringify(withoutHost(a.rawHeaders)) === JSON.stringify(withoutHost(b.rawHeaders)) &&
      [JSON.stringify(hostValues(b.rawHeaders)), JSON.stringify([absolute[1]])].includes(JSON.stringify(hostValues(a.rawHeaders)));
  return url && fields && ours.tunnel === theirs.tunnel && a.method === b.method && a.version === b.version &&
    a.body.equals(b.body) && JSON.stringify(a.trailers) === JSON.stringify(b.trailers);
}

function withoutHost(fields) {
  return fields.filter(([name]) => name.toLowerCase() !== 'host');
}

function hostValues(fields) {
  return fields.filter(([name]) => name.toLowerCase() === 'host').map(([, value]) => value);
}

function describeOutcome(result) {
  if (result.kind === 'request') {
    const r = result.request;
    return `reads ${JSON.stringify({ method: r.method, url: r.url, version: r.version, fields: r.rawHeaders, body: r.body.toString('latin1'), trailers: r.trailers, tunnel: result.tunnel })}`;
  }
  if (result.kind === 'refused') return `refuses it (${JSON.stringify(result.detail)})`;
  if (result.kind === 'incomplete') return `waits for more (${JSON.stringify(result.detail)})`;
  return 'reads nothing more';
}

// What a split may not change: every request read, and whether and where reading ended.
// Which status a refusal gets may change (see the skipped cases): a request line checked
// on its own gets its own answer before the rest of the head is checked.
function comparable(result) {
  const end = result.end.refused === undefined ? result.end : { refused: true };
  return { requests: result.requests, end, left: result.left };
}

// A chunked body scanned a read at a time: where it ends (relative to its start) and its data.
function scanAll(pieces) {
  const scanner = new ChunkedScanner(LIMITS.maxHeaderSize);
  const data = [];
  let offset = 0;
  for (const piece of pieces) {
    const end = scanner.scan(piece, 0, piece.length, (b, from, to) => data.push(b.subarray(from, to)));
    if (end === -2) return { end: -2, data: Buffer.concat(data).toString('latin1') };
    if (end >= 0) return { end: offset + end, data: Buffer.concat(data).toString('latin1') };
    offset += piece.length;
  }
  return { end: -1, data: Buffer.concat(data).toString('latin1') };
}
