'use strict';

const fc = require('fast-check');

// Byte classes, as latin1 strings. RFC 9110 §5.6.2 tchar, RFC 5234 VCHAR, obs-text.
const DIGIT = '0123456789';
const HEXDIG = '0123456789abcdefABCDEF';
const ALPHA = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
const TCHAR = `!#$%&'*+-.^_\`|~${DIGIT}${ALPHA}`;
const VCHAR = range(0x21, 0x7e);
const OBS_TEXT = range(0x80, 0xff);
// Control bytes other than HTAB, CR and LF, and DEL.
const CONTROL = `${range(0x00, 0x08)}\x0b\x0c${range(0x0e, 0x1f)}\x7f`;
const DELIMITERS = '"(),/:;<=>?@[\\]{}';
// RFC 3986 pchar without '%', which comes only as a whole escape.
const PCHAR = `${ALPHA}${DIGIT}-._~!$&'()*+,;=:@`;
// In no URI (RFC 3986), yet in many a request target.
const UNSAFE_TARGET = '"<>\\^`{|}#';
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'];
const EXTENSION_METHODS = ['PURGE', 'PROPFIND', 'MKCOL', 'REPORT', 'M-SEARCH', 'QUERY', 'get', 'Post', 'FOO', 'BREW'];
const FIELD_NAMES = ['Accept', 'User-Agent', 'Cookie', 'Accept-Encoding', 'X-Request-Id', 'TE', 'Trailer', 'Expect', 'Keep-Alive', 'Content-Type'];
const HOSTS = ['example.com', 'api.example.test:8080', 'localhost', '127.0.0.1:9', '[::1]:8443', 'xn--bcher-kva.example', 'a', 'a.b.c:'];

/**
 * A part of a message: its text (latin1, a byte a character) and the tags of
 * what it does that a plain, valid request would not (see the tables in
 * test/http-parser-properties.test.js).
 *
 * @typedef {{text: string, tags: string[]}} Part
 */

/**
 * A stream of HTTP/1.1 requests on one connection: one to three messages,
 * each structured (request line, fields, framing, body) but bent in
 * adversarial ways, each way tagged; now and then cut short.
 *
 * @param {{maxHeaderSize: number}} limits sizes past these come only far past them
 * @returns {fc.Arbitrary<{messages: Part[], bytes: Buffer, cutAt: number | null}>}
 */
function requestStream(limits) {
  return fc.record({
    messages: fc.array(requestMessage(limits), { minLength: 1, maxLength: 3 }),
    cut: weighted([5, fc.constant(null)], [1, fc.double({ min: 0, max: 1, noNaN: true })])
  }).map(({ messages, cut }) => {
    // A tagged message leaves in doubt where the next one would start (or whether it is read): it is the last.
    const last = messages.findIndex((message) => message.tags.length > 0);
    const kept = last === -1 ? messages : messages.slice(0, last + 1);
    const whole = Buffer.from(kept.map((message) => message.text).join(''), 'latin1');
    const cutAt = cut === null ? null : Math.floor(cut * whole.length);
    return { messages: kept, bytes: cutAt === null ? whole : whole.subarray(0, cutAt), cutAt };
  });
}

/**
 * One request message.
 *
 * @param {{maxHeaderSize: number}} limits
 * @returns {fc.Arbitrary<Part>}
 */
function requestMessage(limits) {
  return fc.record({
    leading: weighted([8, fc.constant(part(''))], [1, fc.constant(part('\r\n'))], [1, fc.constant(part('\r\n\r\n'))]),
    method: method(),
    sp1: separator(),
    target: target(limits),
    sp2: separator(),
    version: version(),
    eol: lineEnd(),
    host: hostFields(),
    fields: fc.array(field(limits), { maxLength: 6 }),
    connection: connection(),
    framing: framing(),
    at: fc.nat({ max: 8 })
  }).map((m) => {
    const http10 = m.version.text === 'HTTP/1.0';
    const tags = [];
    const fieldParts = [...m.host, ...m.fields];
    // Host is required of HTTP/1.1 (RFC 9112 §3.2).
    if (m.host.length === 0 && !http10) tags.push('no-host');
    const framingFields = m.framing.fields(http10);
    fieldParts.splice(Math.min(m.at, fieldParts.length), 0, ...framingFields, ...m.connection.fields);
    const upgrade = m.connection.tags.includes('upgrade');
    if (m.method.text === 'CONNECT' || upgrade) tags.push('tunnel');
    const line = `${m.method.text}${m.sp1.text}${m.target.text(m.method.text)}${m.sp2.text}${m.version.text}${m.eol.text}`;
    tags.push(...lineEndTags(line, []));
    const head = `${m.leading.text}${line}${fieldParts.map((f) => f.text).join('')}\r\n`;
    // A tunnel's bytes after its head are the tunnel's: no body is sent with it.
    const tunnel = m.method.text === 'CONNECT' || upgrade;
    const body = tunnel ? '' : m.framing.body;
    if (!tunnel) tags.push(...m.framing.bodyTags);
    for (const p of [m.method, m.sp1, m.sp2, m.version, m.connection, ...fieldParts]) tags.push(...p.tags);
    tags.push(...m.target.tags(m.method.text), ...m.framing.tags(http10));
    return { text: head + body, tags: [...new Set(tags)] };
  });
}

/**
 * A chunked body: chunks of any size (hex in either case, leading zeros),
 * extensions, the last chunk and trailer fields, bent in tagged ways.
 *
 * @returns {fc.Arbitrary<Part & {data: string}>} `data` is what the chunks carry, when valid
 */
function chunkedBody() {
  return fc.record({
    chunks: fc.array(chunk(), { maxLength: 4 }),
    last: fc.record({ size: weighted([20, fc.constant(part('0'))], [5, fc.constant(part('000'))], [1, fc.constant(part('0 ', 'chunk-size-whitespace'))]), ext: chunkExtension() }),
    trailers: fc.array(field({ maxHeaderSize: 1024 }, true), { maxLength: 3 }),
    end: weighted([40, fc.constant(part('\r\n'))], [1, fc.constant(part('\n', 'chunk-bare-lf'))], [1, fc.constant(part('', 'chunk-unfinished'))])
  }).map(({ chunks, last, trailers, end }) => {
    const text = chunks.map((c) => c.text).join('') + `${last.size.text}${last.ext.text}\r\n` + trailers.map((t) => t.text).join('') + end.text;
    const tags = [...chunks.flatMap((c) => c.tags), ...last.size.tags, ...last.ext.tags, ...trailers.flatMap((t) => t.tags.map(trailerTag)), ...end.tags];
    return { text, tags: [...new Set(tags)], data: chunks.map((c) => c.data).join('') };
  });
}

/**
 * Cut points for a buffer of `length` bytes: how to split it into reads.
 *
 * @param {number} length
 * @returns {fc.Arbitrary<number[]>} sorted offsets inside the buffer
 */
function cuts(length) {
  return fc.uniqueArray(fc.integer({ min: 1, max: Math.max(1, length - 1) }), { maxLength: Math.min(12, length) })
    .map((offsets) => offsets.filter((offset) => offset < length).sort((a, b) => a - b));
}

/**
 * A buffer cut into reads at the given offsets.
 *
 * @param {Buffer} buffer
 * @param {number[]} offsets sorted
 * @returns {Buffer[]}
 */
function split(buffer, offsets) {
  const pieces = [];
  let from = 0;
  for (const offset of [...offsets, buffer.length]) {
    pieces.push(buffer.subarray(from, offset));
    from = offset;
  }
  return pieces;
}

/**
 * PROXY protocol headers, v1 and v2: valid ones of every family, and ones
 * bent a byte or a field at a time, followed by what the client sends next.
 *
 * @returns {fc.Arbitrary<Buffer>}
 */
function proxyHeaderBytes() {
  return fc.tuple(
    weighted([3, proxyV1()], [3, proxyV2()], [1, fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes))]),
    fc.uint8Array({ maxLength: 8 })
  ).chain(([header, after]) => fc.tuple(fc.constant(Buffer.concat([header, after])), mutations(header.length + after.length)))
    .map(([buffer, edits]) => applyEdits(buffer, edits));
}

/**
 * An address pair a proxy header may be written for: IPv4, IPv6 (mapped,
 * zoned, in capitals) or mixed, or an end unknown.
 *
 * @returns {fc.Arbitrary<{source: object | null, destination: object | null}>}
 */
function proxyEnds() {
  const end = fc.record({ address: ipAddress(), port: fc.integer({ min: 0, max: 65535 }) });
  return fc.record({
    source: fc.option(end, { freq: 8 }),
    destination: fc.option(end, { freq: 8 })
  });
}

/**
 * A hosts file: server lines (valid, and bent), comments, blank lines,
 * CRLF and LF, whitespace of every kind, and bytes that have no place there.
 *
 * @returns {fc.Arbitrary<string>}
 */
function hostsFile() {
  const line = weighted(
    [6, fc.tuple(serverSpec(), fc.constantFrom(' ', '  ', '\t')).map(([spec, gap]) => spec.split(',').join(gap))],
    [2, fc.string({ unit: fc.constantFrom(...`# ${ALPHA}`), maxLength: 20 }).map((text) => `#${text}`)],
    [1, fc.constantFrom('', ' ', '\t', '   # comment')],
    [1, fc.string({ unit: 'binary', maxLength: 30 })],
    [1, fc.string({ unit: fc.constantFrom(...`${CONTROL}\r\u2028\ufeff\u00a0 a:1`), maxLength: 12 })]
  );
  return fc.tuple(fc.array(line, { maxLength: 8 }), fc.array(fc.constantFrom('\n', '\r\n'), { minLength: 8, maxLength: 8 }))
    .map(([lines, ends]) => lines.map((text, i) => text + ends[i]).join(''));
}

/**
 * A server as `--server` or a hosts file line takes it (`host:port,params`),
 * valid or bent.
 *
 * @returns {fc.Arbitrary<string>}
 */
function serverSpec() {
  const host = weighted(
    [4, fc.constantFrom('localhost', 'api.internal', 'a', 'db-1.example.com', '10.0.0.7', '127.0.0.1', 'srv', 'b_c')],
    [2, fc.ipV4()],
    [2, fc.ipV6().map((address) => `[${address}]`)],
    [1, fc.ipV6()],
    [1, fc.domain()],
    [2, fc.string({ unit: fc.constantFrom(...`${ALPHA}${DIGIT}.-_[]:%/@ \t`), maxLength: 16 })],
    [1, fc.string({ unit: 'binary', maxLength: 12 })]
  );
  const port = weighted(
    [6, fc.integer({ min: 1, max: 65535 }).map(String)],
    [1, fc.constantFrom('0', '65536', '', '080', '-1', '1e3', '99999999999999999999', ' 80')],
    [1, fc.string({ unit: fc.constantFrom(...`${DIGIT}abc:`), maxLength: 8 })]
  );
  const param = weighted(
    [3, fc.integer({ min: 0, max: 1000 }).map((n) => `weight=${n}`)],
    [2, fc.constantFrom('backup', 'tls', 'h2', 'resolve', 'send-proxy', 'send-proxy-v2', 'sni=api.example.com', 'maxconn=10')],
    [2, fc.string({ unit: fc.constantFrom(...`${ALPHA}${DIGIT}._:-[]`), minLength: 1, maxLength: 10 }).map((name) => `name=${name}`)],
    [2, fc.constantFrom('weight=-1', 'weight=1001', 'weight=', 'weight=1.5', 'maxconn=x', 'name=', 'name=a b', 'sni=1.2.3.4', 'fast', '')],
    [1, fc.string({ unit: 'binary', maxLength: 10 })]
  );
  return weighted(
    [8, fc.tuple(host, port, fc.array(param, { maxLength: 3 }), fc.boolean())
      .map(([h, p, params, colon]) => [colon ? `${h}:${p}` : h, ...params].join(','))],
    [1, fc.constantFrom('srv:_http._tcp.api.example.com', 'srv:', 'srv:8080', 'srv:a:1', 'srv:_x._tcp.a,weight=2', 'srv:_x._tcp.a,resolve')],
    [1, fc.string({ unit: 'binary', maxLength: 30 })]
  );
}

/**
 * What a user may type as an option's value: numbers with and without units
 * and suffixes, addresses, paths, cookie names, and bytes of any kind (no
 * line end: a shell argument may hold one, but that case is kept apart).
 *
 * @returns {fc.Arbitrary<string>}
 */
function optionText() {
  return weighted(
    [3, fc.tuple(fc.oneof(fc.nat().map(String), fc.double({ noNaN: true }).map(String), fc.constantFrom('', '0', '-1', '1e3', '00', '2147483648', '9007199254740993')),
      fc.constantFrom('', 'ms', 's', 'm', 'h', 'k', 'm', 'K', '/s', '/m', ' ', 'x')).map(([n, unit]) => n + unit)],
    [1, fc.tuple(fc.integer({ min: 1, max: 10000 }), fc.constantFrom('/s', '/m', '/h', '/min', 'r/s')).map(([n, per]) => `${n}${per}`)],
    [1, fc.constantFrom('cookie', 'cookie:', 'cookie:lila', 'cookie:a b', 'cookie:ä', '/health', '/a b', 'health', '/\x00')],
    [1, fc.tuple(ipAddress(), fc.option(fc.integer({ min: 0, max: 70000 }))).map(([ip, port]) => (port === null ? ip : ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`))],
    [1, fc.string({ unit: 'binary', maxLength: 16 }).filter((text) => !/[\r\n\u2028\u2029]/.test(text))]
  );
}

module.exports = {
  requestStream, requestMessage, chunkedBody, cuts, split,
  proxyHeaderBytes, proxyEnds, hostsFile, serverSpec, ipAddress, optionText
};

// A line's tags, with bare-cr and bare-lf as its bytes make them: parts that bend one way each
// may make a CRLF together (a value ending in CR, then an LF).
function lineEndTags(text, tags) {
  const kept = tags.filter((tag) => tag !== 'bare-cr' && tag !== 'bare-lf');
  if (/\r(?!\n)/.test(text)) kept.push('bare-cr');
  if (/(?<!\r)\n/.test(text)) kept.push('bare-lf');
  return kept;
}

function part(text, ...tags) {
  return { text, tags };
}

function weighted(...entries) {
  return fc.oneof(...entries.map(([weight, arbitrary]) => ({ weight, arbitrary })));
}

function chars(alphabet, minLength, maxLength) {
  return fc.string({ unit: fc.constantFrom(...alphabet), minLength, maxLength });
}

// A token with one byte that is not tchar put somewhere in it.
function spoiled(base, alphabet) {
  return fc.tuple(base, fc.constantFrom(...alphabet), fc.nat()).map(([text, bad, at]) => {
    const i = at % (text.length + 1);
    return text.slice(0, i) + bad + text.slice(i);
  });
}

function method() {
  return weighted(
    [30, fc.constantFrom(...METHODS).map((m) => part(m))],
    [2, fc.oneof(fc.constantFrom(...EXTENSION_METHODS), chars(TCHAR, 1, 10)).map((m) => part(m, 'extension-method'))],
    [1, fc.constant(part('CONNECT'))],
    [1, spoiled(chars(ALPHA, 0, 6), `${DELIMITERS}${CONTROL}${OBS_TEXT}`).map((m) => part(m, 'invalid-method'))]
  );
}

function separator() {
  return weighted([60, fc.constant(part(' '))], [1, fc.constantFrom('  ', '\t', ' \t').map((s) => part(s, 'request-line-whitespace'))]);
}

function originForm(alphabet) {
  return fc.tuple(fc.array(chars(alphabet, 0, 10), { maxLength: 4 }), fc.option(chars(alphabet, 0, 16)), fc.boolean())
    .map(([segments, query, escape]) => `/${segments.join('/')}${escape ? '%2F%20' : ''}${query === null ? '' : `?${query}`}`);
}

// A target depends on the method: CONNECT takes authority-form (RFC 9112 §3.2.3).
function target(limits) {
  const bent = (alphabet, tag) => fc.tuple(originForm(PCHAR), chars(alphabet, 1, 3), fc.nat())
    .map(([origin, bad, at]) => {
      const i = 1 + (at % origin.length);
      return { form: origin.slice(0, i) + bad + origin.slice(i), tag };
    });
  const form = weighted(
    [40, originForm(PCHAR).map((form) => ({ form, tag: null }))],
    [1, fc.constant({ form: '*', tag: 'asterisk-form' })],
    [1, fc.tuple(fc.constantFrom(...HOSTS), originForm(PCHAR)).map(([host, path]) => ({ form: `http://${host}${path}`, tag: 'absolute-form' }))],
    [1, fc.constantFrom('example.com:443', 'a:1').map((form) => ({ form, tag: 'authority-form' }))],
    [1, bent(UNSAFE_TARGET, 'target-unsafe')],
    [1, bent(OBS_TEXT, 'target-obs-text')],
    [1, bent(`${CONTROL}`, 'target-control')],
    [1, fc.constant({ form: '', tag: 'invalid-target' })],
    [1, fc.integer({ min: 2 * limits.maxHeaderSize, max: 3 * limits.maxHeaderSize }).map((n) => ({ form: `/${'a'.repeat(n)}`, tag: 'huge-target' }))]
  );
  return form.map(({ form: f, tag }) => ({
    text: (m) => (m === 'CONNECT' ? 'example.com:443' : f),
    tags: (m) => {
      if (m === 'CONNECT') return [];
      // The asterisk-form is for OPTIONS alone (RFC 9112 §3.2.4).
      if (tag === 'asterisk-form' && m === 'OPTIONS') return [];
      return tag === null ? [] : [tag];
    }
  }));
}

function version() {
  return weighted(
    [30, fc.constant(part('HTTP/1.1'))],
    [8, fc.constant(part('HTTP/1.0'))],
    [1, fc.integer({ min: 2, max: 9 }).map((minor) => part(`HTTP/1.${minor}`, 'future-minor'))],
    [1, fc.constantFrom('HTTP/2.0', 'HTTP/3.0', 'HTTP/0.9', 'HTTP/9.9').map((v) => part(v, 'other-version'))],
    [1, fc.constantFrom('http/1.1', 'HTTP/1.10', 'HTTP/11', 'HTTP/1', 'HTTP/1.1 ', 'HTTP /1.1', 'HTTP/1.x', '', 'HTTP/1.1\x00').map((v) => part(v, 'invalid-version'))]
  );
}

function lineEnd() {
  return weighted([80, fc.constant(part('\r\n'))], [1, fc.constant(part('\n', 'bare-lf'))], [1, fc.constantFrom('\r', '\r\r\n').map((e) => part(e, 'bare-cr'))]);
}

function ows() {
  return fc.constantFrom('', '', ' ', ' ', '  ', '\t');
}

// A field value: mostly plain; with inner whitespace, obs-text or nothing; or bent.
function fieldValue() {
  return weighted(
    [40, chars(TCHAR, 1, 16).map((v) => part(v))],
    [15, fc.tuple(chars(VCHAR, 1, 8), fc.constantFrom(' ', '\t', ', ', '; ', '  '), chars(VCHAR, 1, 8)).map(([a, s, b]) => part(a + s + b))],
    [5, fc.tuple(chars(VCHAR, 0, 4), chars(OBS_TEXT, 1, 3), chars(VCHAR, 0, 4)).map(([a, o, b]) => part(a + o + b))],
    [5, fc.constant(part(''))],
    [1, spoiled(chars(VCHAR, 1, 8), CONTROL.replace('\x00', '')).map((v) => part(v, 'control-in-value'))],
    [1, spoiled(chars(VCHAR, 1, 8), '\x00').map((v) => part(v, 'nul-in-value'))],
    [1, spoiled(chars(VCHAR, 1, 8), '\r').map((v) => part(v, 'bare-cr'))],
    [1, spoiled(chars(VCHAR, 1, 8), '\n').map((v) => part(v, 'bare-lf'))]
  );
}

// One field line, named neither Host nor a framing or connection field (those come on their own).
function field(limits, trailer = false) {
  const name = weighted(
    [30, fc.tuple(fc.constantFrom(...FIELD_NAMES), fc.boolean()).map(([n, lower]) => part(lower ? n.toLowerCase() : n))],
    [30, chars(TCHAR, 1, 12).map((n) => part(`X-${n}`))],
    [1, spoiled(chars(ALPHA, 1, 8), `${DELIMITERS.replace(':', '')}${CONTROL}${OBS_TEXT} `).map((n) => part(`X-${n}`, 'invalid-field-name'))],
    [1, fc.constant(part('', 'invalid-field-name'))],
    [1, fc.constantFrom(' ', '\t').map((space) => part(`X-Spaced${space}`, 'space-before-colon'))]
  );
  const value = trailer ? fieldValue() : weighted(
    [100, fieldValue()],
    [1, fc.integer({ min: 2 * limits.maxHeaderSize, max: 3 * limits.maxHeaderSize }).map((n) => part('v'.repeat(n), 'huge-head'))]
  );
  const fold = weighted([60, fc.constant(null)], [1, fc.tuple(fc.constantFrom(' ', '\t'), chars(TCHAR, 1, 6))]);
  return fc.record({ name, before: ows(), value, after: ows(), fold, eol: lineEnd() })
    .map(({ name: n, before, value: v, after, fold, eol }) => {
      const folded = fold === null ? '' : `\r\n${fold[0]}${fold[1]}`;
      const text = `${n.text}:${before}${v.text}${after}${folded}${eol.text}`;
      const tags = [...n.tags, ...v.tags, ...(fold === null ? [] : ['obs-fold'])];
      return { text, tags: lineEndTags(text, tags) };
    });
}

// Host fields: one valid, none, several, or one that is not a valid host (RFC 9112 §3.2).
function hostFields() {
  const line = (value) => `${'Host'}: ${value}\r\n`;
  return weighted(
    [40, fc.tuple(fc.constantFrom(...HOSTS), fc.constantFrom('Host', 'host', 'HOST')).map(([h, n]) => [part(`${n}: ${h}\r\n`)])],
    [1, fc.constant([])],
    [1, fc.constantFrom(...HOSTS).map((h) => [part(line(h)), part(line(h), 'several-hosts')])],
    [1, fc.constantFrom('a b', 'a/b', 'a@b', '[::1', 'a:b:c', '"a"', 'a\\b').map((h) => [part(line(h), 'invalid-host')])]
  );
}

// Connection fields: none, close, keep-alive, or an upgrade.
function connection() {
  return weighted(
    [20, fc.constant({ fields: [], tags: [] })],
    [2, fc.constantFrom('close', 'Close', 'keep-alive', 'Keep-Alive', 'TE', 'keep-alive, x-hop').map((v) => ({ fields: [part(`Connection: ${v}\r\n`)], tags: [] }))],
    [1, fc.constant({ fields: [part('Connection: Upgrade\r\n'), part('Upgrade: websocket\r\n')], tags: ['upgrade'] })]
  );
}

/**
 * How a message frames its body: none, Content-Length (valid or bent), or
 * chunked (with its chunks), each with its fields and body text.
 */
function framing() {
  const bytes = fc.uint8Array({ maxLength: 48 }).map((b) => Buffer.from(b).toString('latin1'));
  const lengthField = (value) => part(`Content-Length: ${value}\r\n`);
  const teField = (value) => part(`Transfer-Encoding: ${value}\r\n`);
  return weighted(
    [12, fc.constant({ fields: () => [], body: '', bodyTags: [], tags: () => [] })],
    [10, fc.tuple(bytes, fc.boolean(), fc.constantFrom('', '', '', ' ', '\t')).map(([body, zeros, after]) => ({
      fields: () => [lengthField(`${zeros ? '00' : ''}${body.length}${after}`)], body, bodyTags: [], tags: () => (after === '\t' ? ['framing-trailing-tab'] : [])
    }))],
    [2, fc.tuple(bytes, fc.constantFrom('list', 'several', 'long', 'invalid')).map(([body, bend]) => ({
      fields: () => (bend === 'list' ? [lengthField(`${body.length}, ${body.length}`)]
        : bend === 'several' ? [lengthField(body.length), lengthField(body.length)]
          : bend === 'long' ? [lengthField(body.length.toString().padStart(16, '0'))]
            : [lengthField(`${body.length}`.replace(/^/, '+'))]),
      body,
      bodyTags: [],
      tags: () => [{ list: 'content-length-list', several: 'several-content-lengths', long: 'long-content-length', invalid: 'invalid-content-length' }[bend]]
    }))],
    [10, fc.tuple(chunkedBody(), fc.constantFrom('chunked', 'Chunked', 'CHUNKED', ' chunked ', 'chunked\t')).map(([chunks, coding]) => ({
      fields: () => [teField(coding)],
      body: chunks.text,
      bodyTags: chunks.tags,
      tags: (http10) => [...(http10 ? ['te-http10'] : []), ...(coding.endsWith('\t') ? ['framing-trailing-tab'] : [])]
    }))],
    [2, fc.tuple(chunkedBody(), fc.constantFrom('gzip, chunked', 'chunked, gzip', 'gzip', 'identity', 'chunked, chunked', '', 'cl')).map(([chunks, coding]) => ({
      fields: () => (coding === 'cl' ? [teField('chunked'), lengthField(chunks.text.length)] : [teField(coding)]),
      body: chunks.text,
      bodyTags: chunks.tags,
      tags: (http10) => [{
        'gzip, chunked': 'te-other-coding', 'chunked, gzip': 'te-not-chunked-last', gzip: 'te-not-chunked-last', identity: 'te-not-chunked-last',
        'chunked, chunked': 'te-chunked-twice', '': 'te-not-chunked-last', cl: 'te-and-cl'
      }[coding], ...(http10 ? ['te-http10'] : [])]
    }))]
  );
}

function chunk() {
  return fc.record({
    data: fc.uint8Array({ minLength: 1, maxLength: 24 }).map((b) => Buffer.from(b).toString('latin1')),
    size: weighted([40, fc.constantFrom('lower', 'upper', 'zeros').map((form) => ({ form, tags: [] }))],
      [1, fc.constantFrom('leading-space', 'trailing-space').map((form) => ({ form, tags: ['chunk-size-whitespace'] }))],
      [1, fc.constantFrom('empty', 'sign', 'hex-prefix', 'not-hex').map((form) => ({ form, tags: ['chunk-size-invalid'] }))],
      [1, fc.constant({ form: 'overflow', tags: ['chunk-size-overflow'] })]),
    ext: chunkExtension(),
    misfit: weighted([40, fc.constant({ delta: 0, tags: [] })], [1, fc.constant({ delta: 1, tags: ['chunk-data-longer'] })], [1, fc.constant({ delta: -1, tags: ['chunk-data-shorter'] })]),
    end: weighted([40, fc.constant(part('\r\n'))], [1, fc.constantFrom('\n', '\r').map((e) => part(e, 'chunk-bare-lf'))])
  }).map(({ data, size, ext, misfit, end }) => {
    const n = Math.max(0, data.length + misfit.delta);
    const hex = n.toString(16);
    const sizes = {
      lower: hex, upper: hex.toUpperCase(), zeros: `00${hex}`, 'leading-space': ` ${hex}`, 'trailing-space': `${hex} `,
      empty: '', sign: `+${hex}`, 'hex-prefix': `0x${hex}`, 'not-hex': `${hex}g`, overflow: `1${'0'.repeat(16)}${hex}`
    };
    return {
      text: `${sizes[size.form]}${ext.text}\r\n${data}${end.text}`,
      tags: [...size.tags, ...ext.tags, ...misfit.tags, ...end.tags],
      data
    };
  });
}

// Chunk extensions (RFC 9112 §7.1.1): names and values, quoted or not; and bent ones.
function chunkExtension() {
  return weighted(
    [30, fc.constant(part(''))],
    [10, fc.tuple(chars(TCHAR, 1, 6), fc.option(fc.oneof(chars(TCHAR, 1, 6), chars(`${ALPHA} ,;=`, 0, 6).map((v) => `"${v}"`)))).map(([name, value]) => part(`;${name}${value === null ? '' : `=${value}`}`))],
    [1, fc.constantFrom(' ;a', '\t;a=b', '  ;a').map((e) => part(e, 'chunk-ext-whitespace-before'))],
    [1, fc.constantFrom('; a', ';a =b', ';a= b', ';a = "b"').map((e) => part(e, 'chunk-ext-whitespace-inside'))],
    [1, fc.constantFrom(';', ';@@', ';a=b c', ';a="open', ';=v', `;a=${OBS_TEXT[3]}`).map((e) => part(e, 'chunk-ext-invalid'))],
    [1, spoiled(fc.constant(';a=b'), `${CONTROL}\n`).map((e) => part(e, 'chunk-ext-control'))]
  );
}

// A field's tags, as a trailer's: whatever makes it invalid makes the body invalid.
function trailerTag(tag) {
  return tag === 'huge-head' ? tag : 'trailer-invalid';
}

// The ways to bend a buffer: overwrite, insert or delete a byte at an offset.
function mutations(length) {
  const edit = fc.record({ kind: fc.constantFrom('set', 'insert', 'delete'), at: fc.nat({ max: Math.max(0, length) }), byte: fc.integer({ min: 0, max: 255 }) });
  return weighted([3, fc.constant([])], [2, fc.array(edit, { minLength: 1, maxLength: 3 })]);
}

function applyEdits(buffer, edits) {
  let bytes = [...buffer];
  for (const { kind, at, byte } of edits) {
    const i = Math.min(at, bytes.length);
    if (kind === 'set' && i < bytes.length) bytes[i] = byte;
    else if (kind === 'insert') bytes = [...bytes.slice(0, i), byte, ...bytes.slice(i)];
    else if (kind === 'delete') bytes.splice(i, 1);
  }
  return Buffer.from(bytes);
}

function ipAddress() {
  return weighted(
    [4, fc.ipV4()],
    [4, fc.ipV6()],
    [1, fc.ipV4().map((v4) => `::ffff:${v4}`)],
    [1, fc.ipV6().map((v6) => `${v6.toUpperCase()}`)],
    [1, fc.tuple(fc.ipV6(), fc.constantFrom('eth0', '1', 'lo')).map(([v6, zone]) => `${v6}%${zone}`)],
    [1, fc.constantFrom('', 'localhost', '1.2.3', '::g')]
  );
}

function proxyV1() {
  const port = weighted([8, fc.integer({ min: 0, max: 65535 }).map(String)], [1, fc.constantFrom('65536', '080', '-1', '', '1 ')]);
  return weighted(
    [6, fc.tuple(fc.constantFrom('TCP4', 'TCP6', 'UNKNOWN', 'TCP5', 'tcp4'), ipAddress(), ipAddress(), port, port, fc.constantFrom(' ', ' ', ' ', '  '))
      .map(([proto, a, b, p, q, gap]) => `PROXY ${proto}${gap}${a} ${b} ${p} ${q}`)],
    [1, fc.constantFrom('PROXY UNKNOWN', 'PROXY UNKNOWN ffff::1 ffff::2 1 2', 'PROXY', 'PROXY ')],
    [1, fc.string({ unit: fc.constantFrom(...`${VCHAR} `), maxLength: 120 }).map((text) => `PROXY ${text}`)]
  ).chain((line) => fc.constantFrom('\r\n', '\r\n', '\n', '\r', '').map((end) => Buffer.from(line + end, 'latin1')));
}

function proxyV2() {
  const signature = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
  return fc.record({
    versionCommand: weighted([6, fc.constantFrom(0x20, 0x21)], [1, fc.integer({ min: 0, max: 255 })]),
    family: weighted([6, fc.constantFrom(0x00, 0x11, 0x12, 0x21, 0x22, 0x31, 0x32)], [1, fc.integer({ min: 0, max: 255 })]),
    length: weighted([6, fc.constant(null)], [1, fc.integer({ min: 0, max: 300 })]),
    addresses: fc.uint8Array({ maxLength: 40 }),
    tlvs: fc.uint8Array({ maxLength: 20 })
  }).map(({ versionCommand, family, length, addresses, tlvs }) => {
    const natural = { 0x1: 12, 0x2: 36, 0x3: 216 }[family >> 4] || 0;
    const block = Buffer.alloc(Math.max(natural, addresses.length) + tlvs.length);
    Buffer.from(addresses).copy(block);
    Buffer.from(tlvs).copy(block, block.length - tlvs.length);
    const head = Buffer.from([versionCommand, family, 0, 0]);
    head.writeUInt16BE(length === null ? block.length : length, 2);
    return Buffer.concat([signature, head, block]);
  });
}

function range(from, to) {
  let out = '';
  for (let c = from; c <= to; c++) out += String.fromCharCode(c);
  return out;
}
