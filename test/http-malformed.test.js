'use strict';

const assert = require('node:assert/strict');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { adminPort, untilIdle } = require('./h2');
const { cleanup, startHttpBackend, startLila, request, rawExchange } = require('./helpers');

// A request hidden in the bytes of another: lila and a backend that framed the message
// differently would disagree on where it starts.
const SMUGGLED = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
const LAST_CHUNK = '0\r\n\r\n';
const ADMIN = 'POST /admin HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n';
// What reaches the backend: not a byte.
const NOTHING = 'nothing';
// At most the head and the first chunks of a chunked body, never a whole request, and never
// the bytes after the error (the error is in the body, found while the head may be on its way).
const NO_WHOLE_REQUEST = 'no whole request';
// A bound, not a wait: every row ends with lila closing the connection well before it.
const REPLY_WITHIN_MS = 2000;

/**
 * The malformed and ambiguous HTTP/1.1 requests, and what lila does with each, on both engines
 * unless a row's `fast` or `node` says what that engine does instead, and why.
 * - `bytes`: everything the client sends, on a connection of its own. A request lila must
 *   refuse is followed by SMUGGLED, which must never reach the backend; one an engine forwards
 *   asks for Connection: close instead.
 * - `status`: the status the client gets, after which lila closes the connection: lila's own
 *   answer, or for a request it forwards the backend's (a 400 there is the backend's parser,
 *   core http's, refusing what lila let through).
 * - `upstream`: what the backend receives: NOTHING, NO_WHOLE_REQUEST, or the exact bytes of
 *   the one request lila forwards (`forwarded()`).
 */
const ROWS = [
  // RFC 9112 §2.2: empty lines before the request line are ignored.
  {
    name: 'an empty line before the request line',
    bytes: '\r\nGET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    status: 200,
    upstream: forwarded('GET /a HTTP/1.1', ['Host: x'])
  },
  // RFC 9112 §2.2: a recipient MAY take a bare LF for a line terminator; lila does not.
  { name: 'bare LF line terminators', bytes: `GET / HTTP/1.1\nHost: x\n\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'a bare CR ending the request line', bytes: `GET / HTTP/1.1\rHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'a bare CR ending a header line', bytes: `GET / HTTP/1.1\r\nHost: x\rX: y\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },

  // RFC 9112 §3: request-line = method SP request-target SP HTTP-version.
  { name: 'a method with @ in it', bytes: `G@T / HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  // RFC 9110 §9.1: a method is a case-sensitive token; a proxy forwards one it does not know.
  {
    name: 'a lowercase method',
    bytes: 'get / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    status: 400,
    upstream: forwarded('get / HTTP/1.1', ['Host: x']),
    why: 'forwarded as sent; the 400 is the backend\'s, whose parser knows no method "get"',
    node: { status: 400, upstream: NOTHING, why: "core http's parser refuses a method it does not know" }
  },
  {
    name: 'CONNECT',
    bytes: `CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n${SMUGGLED}`,
    status: 501,
    upstream: NOTHING
  },
  { name: 'a request line without a target', bytes: `GET HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  {
    name: 'two spaces between method and target',
    bytes: 'GET  / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    status: 400,
    upstream: NOTHING,
    node: {
      status: 200,
      upstream: forwarded('GET / HTTP/1.1', ['Host: x']),
      why: "core http's parser takes a run of spaces for one, as RFC 9112 §3 lets a recipient do"
    }
  },
  { name: 'tabs between the parts of the request line', bytes: `GET\t/\tHTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'a space after the version', bytes: `GET / HTTP/1.1 \r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'a space inside the target', bytes: `GET /a b HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'a control character in the target', bytes: `GET /a\x01b HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'a NUL byte in the target', bytes: `GET /a\x00b HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'DEL in the target', bytes: `GET /a\x7fb HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  {
    name: 'a non-ASCII byte in the target',
    bytes: 'GET /caf\xe9 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    status: 400,
    upstream: NOTHING,
    fast: {
      status: 400,
      upstream: forwarded('GET /caf\xe9 HTTP/1.1', ['Host: x']),
      why: "the fast engine takes obs-text in a target and forwards it; the 400 is the backend's"
    }
  },
  { name: 'a bare LF inside the target', bytes: `GET /a\nb HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  // RFC 9112 §3.2.4: the asterisk-form is for OPTIONS only.
  { name: 'GET with the asterisk-form target *', bytes: `GET * HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  {
    name: 'OPTIONS *',
    bytes: 'OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    status: 200,
    upstream: forwarded('OPTIONS * HTTP/1.1', ['Host: x'])
  },
  // RFC 9112 §3.2.3: the authority-form is for CONNECT only.
  { name: 'GET with an authority-form target', bytes: `GET other.test:80 HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  // RFC 9112 §3.2.2: a server must accept the absolute-form; the target's authority replaces Host.
  {
    name: 'an absolute-form target naming another host than Host',
    bytes: 'GET http://other.test/x?y=1 HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n',
    status: 200,
    upstream: forwarded('GET /x?y=1 HTTP/1.1', ['Host: other.test'])
  },
  { name: 'an absolute-form target of another scheme', bytes: `GET ftp://other.test/x HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  // RFC 9110 §4.2.4: userinfo in an http(s) URI is an error.
  {
    name: 'an absolute-form target with userinfo',
    bytes: `GET http://user:pw@other.test/x HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`,
    status: 400,
    upstream: NOTHING
  },
  // RFC 9112 §3: a server that receives a request-target longer than it wishes to parse answers 414.
  { name: 'a request target of 20 KiB', bytes: `GET /${'a'.repeat(20 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 414, upstream: NOTHING },

  // RFC 9112 §2.3: HTTP-version = "HTTP" "/" DIGIT "." DIGIT, case-sensitive.
  { name: 'a request line without a version (HTTP/0.9)', bytes: `GET /\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'HTTP/0.9 with headers', bytes: `GET / HTTP/0.9\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'a lowercase http/1.1', bytes: `GET / http/1.1\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'HTTP/1.10 (two digits)', bytes: `GET / HTTP/1.10\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  // RFC 9110 §2.5: a higher minor version is served as the highest the recipient knows.
  {
    name: 'HTTP/1.2',
    bytes: 'GET / HTTP/1.2\r\nHost: x\r\nConnection: close\r\n\r\n',
    status: 200,
    upstream: forwarded('GET / HTTP/1.1', ['Host: x']),
    node: { status: 400, upstream: NOTHING, why: "core http's parser (llhttp) refuses any HTTP/1 minor version but 0 and 1" }
  },
  // RFC 9110 §15.6.6: 505 to a major version the server does not support on this line.
  { name: 'HTTP/2.0 in an HTTP/1 request line', bytes: `GET / HTTP/2.0\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 505, upstream: NOTHING },
  {
    name: 'HTTP/3.0 in an HTTP/1 request line',
    bytes: `GET / HTTP/3.0\r\nHost: x\r\n\r\n${SMUGGLED}`,
    status: 505,
    upstream: NOTHING,
    node: { status: 400, upstream: NOTHING, why: "core http's parser refuses the version before lila can answer 505, as it does to HTTP/2.0" }
  },

  // RFC 9112 §3.2: no Host, several Host lines or an invalid Host MUST be answered 400.
  { name: 'an HTTP/1.1 request without Host', bytes: `GET / HTTP/1.1\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'two Host headers', bytes: `GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'one Host header with two values', bytes: `GET / HTTP/1.1\r\nHost: x, y\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'a Host with a space inside', bytes: `GET / HTTP/1.1\r\nHost: x y\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'a Host with a path', bytes: `GET / HTTP/1.1\r\nHost: x/y\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  { name: 'a Host with userinfo', bytes: `GET / HTTP/1.1\r\nHost: u@x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  // RFC 3986 §3.2.3: port = *DIGIT, no range; a Host of x:99999 is well-formed.
  {
    name: 'a Host with a port beyond 65535',
    bytes: 'GET / HTTP/1.1\r\nHost: x:99999\r\nConnection: close\r\n\r\n',
    status: 200,
    upstream: forwarded('GET / HTTP/1.1', ['Host: x:99999'])
  },
  // RFC 9112 §3.2: a client sends an empty Host when the target URI has no authority.
  {
    name: 'an empty Host',
    bytes: 'GET / HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n',
    status: 200,
    upstream: forwarded('GET / HTTP/1.1', ['Host: '])
  },

  // RFC 9110 §5.1 and RFC 9112 §5: a field line is a token, a colon, the value.
  { name: 'a space between a header name and its colon', bytes: get(['X-Y : z']) + SMUGGLED, status: 400, upstream: NOTHING },
  { name: 'a tab between a header name and its colon', bytes: get(['X-Y\t: z']) + SMUGGLED, status: 400, upstream: NOTHING },
  { name: 'a space inside a header name', bytes: get(['X Y: z']) + SMUGGLED, status: 400, upstream: NOTHING },
  { name: 'an @ in a header name', bytes: get(['X@Y: z']) + SMUGGLED, status: 400, upstream: NOTHING },
  { name: 'a non-ASCII byte in a header name', bytes: get(['X\xe9Y: z']) + SMUGGLED, status: 400, upstream: NOTHING },
  { name: 'an empty header name', bytes: get([': z']) + SMUGGLED, status: 400, upstream: NOTHING },
  { name: 'a header line without a colon', bytes: get(['X-No-Colon']) + SMUGGLED, status: 400, upstream: NOTHING },
  // RFC 9112 §2.2: whitespace between the start line and the first field line is refused.
  { name: 'a space before the first header line', bytes: `GET / HTTP/1.1\r\n Host: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  // RFC 9112 §5.2: obs-fold is rejected with 400 (or replaced by spaces).
  { name: 'a header value folded onto a continuation line (obs-fold)', bytes: get(['X: a', ' b']) + SMUGGLED, status: 400, upstream: NOTHING },
  // RFC 9110 §5.5: CR, LF and NUL in a value are refused.
  { name: 'a NUL byte in a header value', bytes: get(['X: a\x00b']) + SMUGGLED, status: 400, upstream: NOTHING },
  { name: 'a bare LF in a header value', bytes: get(['X: a\nb']) + SMUGGLED, status: 400, upstream: NOTHING },
  { name: 'a bare CR in a header value', bytes: get(['X: a\rb']) + SMUGGLED, status: 400, upstream: NOTHING },
  { name: 'DEL in a header value', bytes: get(['X: a\x7fb']) + SMUGGLED, status: 400, upstream: NOTHING },
  {
    name: 'an underscore in a header name',
    why: 'a token: forwarded as sent',
    bytes: get(['X_Y: z', 'Connection: close']),
    status: 200,
    upstream: forwarded('GET / HTTP/1.1', ['Host: x', 'X_Y: z'])
  },
  { name: 'a request head of 20 KiB', bytes: get([`X-Big: ${'a'.repeat(20 * 1024)}`]) + SMUGGLED, status: 431, upstream: NOTHING },

  // RFC 9112 §6.3: Transfer-Encoding with Content-Length is an error (llhttp strict).
  {
    name: 'Content-Length and Transfer-Encoding: chunked together',
    bytes: post([`Content-Length: ${LAST_CHUNK.length + SMUGGLED.length}`, 'Transfer-Encoding: chunked'], LAST_CHUNK + SMUGGLED),
    status: 400,
    upstream: NOTHING
  },
  {
    name: 'Transfer-Encoding: chunked and Content-Length together',
    bytes: post(['Transfer-Encoding: chunked', `Content-Length: ${LAST_CHUNK.length + SMUGGLED.length}`], LAST_CHUNK + SMUGGLED),
    status: 400,
    upstream: NOTHING
  },
  // RFC 9112 §6.3 ¶5, RFC 9110 §8.6: an invalid Content-Length is an unrecoverable error.
  {
    name: 'two Content-Length headers with different values',
    bytes: post(['Content-Length: 5', `Content-Length: ${5 + SMUGGLED.length}`], `hello${SMUGGLED}`),
    status: 400,
    upstream: NOTHING
  },
  { name: 'one Content-Length with two different values', bytes: post([`Content-Length: 5, ${5 + SMUGGLED.length}`], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  { name: 'two Content-Length headers with the same value', bytes: post(['Content-Length: 5', 'Content-Length: 5'], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  { name: 'a negative Content-Length', bytes: post(['Content-Length: -5'], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  { name: 'a Content-Length with a space inside', bytes: post(['Content-Length: 1 0'], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  { name: 'a Content-Length with a leading +', bytes: post(['Content-Length: +5'], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  { name: 'a hexadecimal Content-Length', bytes: post(['Content-Length: 0x5'], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  { name: 'an empty Content-Length', bytes: post(['Content-Length: '], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  { name: 'a Content-Length beyond 64 bits', bytes: post(['Content-Length: 99999999999999999999'], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  // RFC 9112 §6.3 ¶4: in a request, chunked must be the final transfer coding.
  { name: 'Transfer-Encoding: chunked, gzip (chunked not last)', bytes: post(['Transfer-Encoding: chunked, gzip'], chunk('hello') + LAST_CHUNK + SMUGGLED), status: 400, upstream: NOTHING },
  {
    name: 'Transfer-Encoding: chunked then Transfer-Encoding: gzip on two lines',
    bytes: post(['Transfer-Encoding: chunked', 'Transfer-Encoding: gzip'], chunk('hello') + LAST_CHUNK + SMUGGLED),
    status: 400,
    upstream: NOTHING
  },
  { name: 'Transfer-Encoding: gzip without chunked', bytes: post(['Transfer-Encoding: gzip'], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  { name: 'Transfer-Encoding: identity', bytes: post(['Transfer-Encoding: identity'], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  // RFC 9112 §6.1: 501 to a transfer coding the server does not understand.
  { name: 'Transfer-Encoding: gzip, chunked', bytes: post(['Transfer-Encoding: gzip, chunked'], chunk('hello') + LAST_CHUNK + SMUGGLED), status: 501, upstream: NOTHING },
  { name: 'Transfer-Encoding: xchunked', bytes: post(['Transfer-Encoding: xchunked'], chunk('hello') + LAST_CHUNK + SMUGGLED), status: 400, upstream: NOTHING },
  { name: 'Transfer-Encoding: "chunked" in quotes', bytes: post(['Transfer-Encoding: "chunked"'], chunk('hello') + LAST_CHUNK + SMUGGLED), status: 400, upstream: NOTHING },
  {
    name: 'Transfer-Encoding: chunked folded onto a continuation line',
    bytes: post(['Transfer-Encoding:', ' chunked'], chunk('hello') + LAST_CHUNK + SMUGGLED),
    status: 400,
    upstream: NOTHING
  },
  {
    name: 'a space between Transfer-Encoding and its colon',
    bytes: post(['Transfer-Encoding : chunked', `Content-Length: ${5 + SMUGGLED.length}`], `hello${SMUGGLED}`),
    status: 400,
    upstream: NOTHING
  },
  // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 request means the framing is faulty.
  {
    name: 'Transfer-Encoding: chunked in an HTTP/1.0 request',
    bytes: `POST / HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${chunk('hello')}${LAST_CHUNK}${SMUGGLED}`,
    status: 400,
    upstream: NOTHING
  },
  // RFC 9112 §7: transfer-coding names are case-insensitive.
  {
    name: 'Transfer-Encoding: CHUNKED in capitals',
    bytes: post(['Transfer-Encoding: CHUNKED', 'Connection: close'], chunk('hello') + LAST_CHUNK),
    status: 200,
    upstream: forwarded('POST / HTTP/1.1', ['Host: x', 'Transfer-Encoding: chunked'], chunk('hello') + LAST_CHUNK)
  },

  // RFC 9112 §7.1: chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF, chunk-size = 1*HEXDIG.
  {
    name: 'a chunk size beyond 64 bits',
    bytes: post(['Transfer-Encoding: chunked'], `ffffffffffffffffff\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    upstream: NO_WHOLE_REQUEST
  },
  { name: 'a negative chunk size', bytes: post(['Transfer-Encoding: chunked'], `-1\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`), status: 400, upstream: NO_WHOLE_REQUEST },
  { name: 'a chunk size with 0x', bytes: post(['Transfer-Encoding: chunked'], `0x5\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`), status: 400, upstream: NO_WHOLE_REQUEST },
  { name: 'a space before the chunk size', bytes: post(['Transfer-Encoding: chunked'], ` 5\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`), status: 400, upstream: NO_WHOLE_REQUEST },
  { name: 'an empty chunk size line', bytes: post(['Transfer-Encoding: chunked'], `\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`), status: 400, upstream: NO_WHOLE_REQUEST },
  // RFC 9112 §7.1.1: chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ).
  { name: 'a chunk extension without a name', bytes: post(['Transfer-Encoding: chunked'], `5;\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`), status: 400, upstream: NO_WHOLE_REQUEST },
  { name: 'a chunk extension with a space inside its name', bytes: post(['Transfer-Encoding: chunked'], `5;a b\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`), status: 400, upstream: NO_WHOLE_REQUEST },
  { name: 'a chunk extension with an unterminated quoted value', bytes: post(['Transfer-Encoding: chunked'], `5;a="b\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`), status: 400, upstream: NO_WHOLE_REQUEST },
  {
    name: 'a bare CR in a chunk extension',
    bytes: post(['Transfer-Encoding: chunked'], `5;a\rb\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    upstream: NO_WHOLE_REQUEST
  },
  {
    name: 'a chunk extension ending in a bare LF',
    bytes: post(['Transfer-Encoding: chunked'], `5;a\nhello\r\n${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    upstream: NO_WHOLE_REQUEST
  },
  {
    name: 'a chunk size line ending in a bare LF',
    bytes: post(['Transfer-Encoding: chunked'], `5\nhello\r\n${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    upstream: NO_WHOLE_REQUEST
  },
  {
    name: 'chunk data not followed by CRLF',
    bytes: post(['Transfer-Encoding: chunked'], `5\r\nhello${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    upstream: NO_WHOLE_REQUEST
  },
  {
    name: 'chunk data followed by a bare LF',
    bytes: post(['Transfer-Encoding: chunked'], `5\r\nhello\n${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    upstream: NO_WHOLE_REQUEST
  },
  {
    name: 'chunk data longer than its chunk size',
    bytes: post(['Transfer-Encoding: chunked'], `3\r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`),
    status: 400,
    upstream: NO_WHOLE_REQUEST
  },
  {
    name: 'a last chunk without its final CRLF, followed by a request',
    bytes: post(['Transfer-Encoding: chunked'], `${chunk('hello')}0\r\n${SMUGGLED}`),
    status: 400,
    upstream: NO_WHOLE_REQUEST
  },
  {
    name: 'a trailer field with a space in its name',
    bytes: post(['Transfer-Encoding: chunked'], `${chunk('hello')}0\r\nX Y: z\r\n\r\n${SMUGGLED}`),
    status: 400,
    upstream: NO_WHOLE_REQUEST
  },
  // RFC 9112 §7.1.1: chunk extensions are the sender's, passed on as received.
  {
    name: 'chunk extensions with and without values',
    bytes: post(['Transfer-Encoding: chunked', 'Connection: close'], `5;name=value\r\nhello\r\n6;flag\r\n world\r\n${LAST_CHUNK}`),
    status: 200,
    upstream: forwarded('POST / HTTP/1.1', ['Host: x', 'Transfer-Encoding: chunked'], `5;name=value\r\nhello\r\n6;flag\r\n world\r\n${LAST_CHUNK}`),
    node: {
      status: 200,
      upstream: forwarded('POST / HTTP/1.1', ['Host: x', 'Transfer-Encoding: chunked'], `5\r\nhello\r\n6\r\n world\r\n${LAST_CHUNK}`),
      why: 'core http chunks the body anew, without them (RFC 9112 §7.1.1 lets a recipient ignore them)'
    }
  },
  // From the smuggling cases: each refused before a byte of the request reaches the backend.
  // RFC 9112 §6.3: Transfer-Encoding with Content-Length is handled as an error (llhttp strict).
  {
    name: 'Content-Length then Transfer-Encoding: chunked, the Content-Length shorter than the chunked body',
    bytes: post([`Content-Length: ${chunk(SMUGGLED).length - SMUGGLED.length - 2}`, 'Transfer-Encoding: chunked'], chunk(SMUGGLED) + LAST_CHUNK),
    status: 400,
    upstream: NOTHING
  },
  {
    name: 'Content-Length then Transfer-Encoding: chunked, the Content-Length longer than the chunked body',
    bytes: post([`Content-Length: ${LAST_CHUNK.length + SMUGGLED.length}`, 'Transfer-Encoding: chunked'], LAST_CHUNK + SMUGGLED),
    status: 400,
    upstream: NOTHING
  },
  {
    name: 'Transfer-Encoding: chunked then Content-Length, the Content-Length shorter than the chunked body',
    bytes: post(['Transfer-Encoding: chunked', `Content-Length: ${chunk(ADMIN).length - ADMIN.length - 2}`], chunk(ADMIN) + LAST_CHUNK),
    status: 400,
    upstream: NOTHING
  },
  {
    name: 'Transfer-Encoding: chunked then Content-Length, the Content-Length longer than the chunked body',
    bytes: post(['Transfer-Encoding: chunked', `Content-Length: ${LAST_CHUNK.length + ADMIN.length}`], LAST_CHUNK + ADMIN),
    status: 400,
    upstream: NOTHING
  },
  // RFC 9112 §6.3 ¶5 and RFC 9110 §8.6: an invalid Content-Length is an unrecoverable error.
  { name: 'one Content-Length header with two different values', bytes: post([`Content-Length: 5, ${5 + SMUGGLED.length}`], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  { name: 'one Content-Length header with the same value twice', bytes: post(['Content-Length: 5, 5'], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  { name: 'a Content-Length with a letter after the digits', bytes: post(['Content-Length: 5a'], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  // RFC 9112 §6.3 ¶4: in a request, chunked must be the final transfer coding; §7.1: only once.
  { name: 'Transfer-Encoding: gzip', bytes: post(['Transfer-Encoding: gzip'], `hello${SMUGGLED}`), status: 400, upstream: NOTHING },
  { name: 'Transfer-Encoding: chunked, gzip', bytes: post(['Transfer-Encoding: chunked, gzip'], chunk('hello') + LAST_CHUNK + SMUGGLED), status: 400, upstream: NOTHING },
  { name: 'Transfer-Encoding: chunked, chunked', bytes: post(['Transfer-Encoding: chunked, chunked'], chunk('hello') + LAST_CHUNK + SMUGGLED), status: 400, upstream: NOTHING },
  { name: 'a vertical tab before chunked in Transfer-Encoding', bytes: post(['Transfer-Encoding:\x0bchunked'], chunk('hello') + LAST_CHUNK + SMUGGLED), status: 400, upstream: NOTHING },
  // RFC 9112 §5.1: whitespace between a field name and its colon MUST be answered 400.
  {
    name: 'whitespace between Transfer-Encoding and its colon',
    bytes: post(['Transfer-Encoding : chunked', `Content-Length: ${5 + SMUGGLED.length}`], `hello${SMUGGLED}`),
    status: 400,
    upstream: NOTHING
  },
  // RFC 9112 §5.2: obs-fold is rejected with 400 (or replaced with spaces: lila rejects it).
  { name: 'Transfer-Encoding folded onto a continuation line', bytes: post(['Transfer-Encoding:\r\n chunked'], chunk('hello') + LAST_CHUNK + SMUGGLED), status: 400, upstream: NOTHING },
  { name: 'a header value folded onto a continuation line', bytes: get(['X: a\r\n b']) + SMUGGLED, status: 400, upstream: NOTHING },
  // RFC 9112 §3: the request line.
  { name: 'a request line without a version', bytes: `GET /\r\nHost: x\r\n\r\n${SMUGGLED}`, status: 400, upstream: NOTHING },
  // RFC 9110 §5.5: CR, LF and NUL in a value are rejected.
  { name: 'NUL in a header value', bytes: get(['X: a\x00b']) + SMUGGLED, status: 400, upstream: NOTHING },
  {
    name: 'a bare LF in a header value before Transfer-Encoding',
    bytes: post(['X: y\nTransfer-Encoding: chunked', `Content-Length: ${LAST_CHUNK.length + SMUGGLED.length}`], LAST_CHUNK + SMUGGLED),
    status: 400,
    upstream: NOTHING
  },
  // RFC 9112 §7.1: chunk-size is 1*HEXDIG, then optional extensions, then CRLF.
  { name: 'a space between chunk size and CRLF', bytes: post(['Transfer-Encoding: chunked'], `5 \r\nhello\r\n${LAST_CHUNK}${SMUGGLED}`), status: 400, upstream: NO_WHOLE_REQUEST },
  // RFC 9112 §5: a head over --max-header-size (16 KiB).
  { name: 'a request head over 16 KiB', bytes: get([`X-Big: ${'x'.repeat(17 * 1024)}`]) + SMUGGLED, status: 431, upstream: NOTHING }
];

for (const engine of HTTP_ENGINES) {
  describe(`malformed HTTP/1.1 requests through the lila executable (${engine} engine)`, () => {
    // One lila and one backend for the whole table, every row on a connection of its own:
    // a lila per row would add seconds. Each row ends with lila idle again.
    let lila;
    let backend;
    let admin;
    before(async () => {
      backend = await startRecordingBackend();
      lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--engine', engine,
        '--admin', '127.0.0.1:0']);
      admin = await adminPort(lila);
    });
    after(cleanup);

    for (const row of ROWS) {
      const { status, upstream, why } = { ...row, ...row[engine] };
      const what = upstream === NOTHING ? 'forwarding nothing'
        : upstream === NO_WHOLE_REQUEST ? 'forwarding no whole request'
          : 'forwarding it';
      const title = `answers ${status} to ${row.name}, ${what}${why === undefined ? '' : ` (${why})`}`;
      it(title, async () => {
        const start = backend.mark();

        const { received, closed } = await rawExchange(lila.port, row.bytes, REPLY_WITHIN_MS);
        await sentinel(lila.port);
        await untilIdle(admin);
        const seen = backend.since(start);

        const evidence = `lila answered ${JSON.stringify(received.slice(0, 300))} and ` +
          `${closed ? 'closed the connection' : `kept it open for ${REPLY_WITHIN_MS} ms`}; ` +
          `the backend received ${JSON.stringify(seen.bytes.slice(0, 600))} (${seen.whole.length} whole requests)`;
        assert.match(received, new RegExp(`^HTTP/1\\.1 ${status} `), evidence);
        assert.ok(closed, evidence);
        assert.doesNotMatch(seen.bytes, /\/smuggled|\/admin/, evidence);
        if (upstream === NOTHING) {
          assert.equal(seen.bytes, '', evidence);
        } else if (upstream === NO_WHOLE_REQUEST) {
          assert.equal(seen.whole.length, 0, evidence);
        } else {
          assert.equal(seen.bytes, upstream, evidence);
          // Read whole by the backend when it answered it (a backend's 400: its parser refused it).
          assert.equal(seen.whole.length, status === 200 ? 1 : 0, evidence);
        }
      });
    }
  });
}

/**
 * An http backend named A that records the bytes of every connection, in the order they
 * arrive, and the requests it read whole; it answers a request with its name once its body is
 * in. `mark()` and `since(mark)` give what arrived in between, the sentinel's requests left out.
 */
async function startRecordingBackend() {
  let bytes = '';
  const whole = [];
  const backend = await startHttpBackend('A', (req, res) => {
    req.resume();
    req.on('end', () => {
      whole.push(`${req.method} ${req.url}`);
      res.end('A');
    });
  });
  backend.on('connection', (socket) => {
    // A 'data' listener makes Node's parser read through the stream too, so both see every byte.
    socket.on('data', (chunk) => { bytes += chunk.toString('latin1'); });
  });
  return Object.assign(backend, {
    mark: () => ({ bytes: bytes.length, whole: whole.length }),
    since: (mark) => ({
      bytes: bytes.slice(mark.bytes).replace(/GET \/sentinel HTTP\/1\.1\r\n[^]*?\r\n\r\n/g, ''),
      whole: whole.slice(mark.whole).filter((line) => line !== 'GET /sentinel')
    })
  });
}

// A well-formed request through lila, answered by the backend after whatever the row sent it.
async function sentinel(port) {
  const res = await request(port, { agent: false, path: '/sentinel' });
  assert.equal(res.body, 'A', `lila forwards a well-formed request (got ${res.status} ${res.body})`);
}

// The bytes lila sends the backend for a request it accepts from 127.0.0.1 for Host x (or the
// one in fields): the request line, the client's fields but hop-by-hop ones, lila's own, the body.
function forwarded(requestLine, fields, body = '') {
  const host = fields.find((field) => /^host:/i.test(field)).slice(5).trim();
  // RFC 7239 §4: a value that is not a token is a quoted-string.
  const forwardedHost = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(host) ? host : `"${host}"`;
  return `${requestLine}\r\n${fields.map((field) => `${field}\r\n`).join('')}` +
    `X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: ${host}\r\n` +
    `Forwarded: for=127.0.0.1;host=${forwardedHost};proto=http\r\nConnection: keep-alive\r\n\r\n${body}`;
}

// A POST to / with Host and these header lines, then body.
function post(fields, body) {
  return `POST / HTTP/1.1\r\nHost: x\r\n${fields.map((field) => `${field}\r\n`).join('')}\r\n${body}`;
}

// A GET of / with Host and these header lines.
function get(fields) {
  return `GET / HTTP/1.1\r\nHost: x\r\n${fields.map((field) => `${field}\r\n`).join('')}\r\n`;
}

function chunk(data) {
  return `${data.length.toString(16)}\r\n${data}\r\n`;
}
