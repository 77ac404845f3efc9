'use strict';

const { headProblem } = require('../request-checks');
const { absoluteTarget, setHost } = require('../request-target');
const { isNamed } = require('../headers');
const { codes } = require('../../errors');

// RFC 9110 §5.6.2 tchar: methods and field names.
const TOKEN = byteTable((c) => c > 0x20 && c < 0x7f && !'"(),/:;<=>?@[\\]{}'.includes(String.fromCharCode(c)));
// RFC 9110 §5.5 field-value bytes: HTAB, SP, VCHAR and obs-text; never CR, LF, NUL or DEL.
const VALUE = byteTable((c) => c === 0x09 || (c >= 0x20 && c !== 0x7f));
// A request target: visible ASCII and obs-text, no whitespace or control.
const TARGET = byteTable((c) => c > 0x20 && c !== 0x7f);
const MALFORMED = 'malformed request';
// A control byte other than HTAB, CR or LF: never valid in a head (RFC 9110
// §5.5). One native scan of the head spares a check of every value byte in
// JavaScript; CR and LF are checked by hasBareCROrLF.
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/;

/**
 * A request head as lila's fast engine read it: what it forwards, and the
 * fields that decide framing, routing and the connection.
 */
class RequestHead {
  constructor() {
    this.method = '';
    this.url = '';
    this.httpVersionMajor = 1;
    this.httpVersionMinor = 1;
    /** `[name, value, name, value, ...]` as received. */
    this.rawHeaders = [];
    /** -1 when there is no Content-Length. */
    this.contentLength = -1;
    this.chunked = false;
    this.host = undefined;
    this.connectionClose = false;
    this.connectionKeepAlive = false;
    this.connectionUpgrade = false;
    /** The Upgrade value, when Connection lists `upgrade`. */
    this.upgrade = undefined;
    this.expectContinue = false;
    /** @type {{status: number, code: string, reason: string} | null} why lila refuses it */
    this.problem = null;
    this.lowercased = null;
  }

  get httpVersion() {
    return `${this.httpVersionMajor}.${this.httpVersionMinor}`;
  }

  /** Headers by lowercase name, joined as Node joins them; built on first use (hash keys). */
  get headers() {
    if (this.lowercased === null) {
      const headers = {};
      const raw = this.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) {
        const name = raw[i].toLowerCase();
        const had = headers[name];
        if (name === 'set-cookie') (had === undefined ? (headers[name] = []) : had).push(raw[i + 1]);
        else headers[name] = had === undefined ? raw[i + 1] : name === 'cookie' ? `${had}; ${raw[i + 1]}` : `${had}, ${raw[i + 1]}`;
      }
      this.lowercased = headers;
    }
    return this.lowercased;
  }
}

/**
 * Parses a request head strictly (RFC 9112 and llhttp's strict mode): any
 * byte out of place makes it a 400, so that lila and a backend can never
 * disagree on where a request ends.
 *
 * @param {string} text the head as latin1, without its final empty line
 * @returns {RequestHead} with `problem` set when lila must refuse it
 */
function parseRequestHead(text) {
  const head = new RequestHead();
  let lineEnd = text.indexOf('\r\n');
  if (lineEnd === -1) lineEnd = text.length;
  // The request line first, as when it arrives alone (requestLineProblem): the same answer
  // however the head's bytes were split into reads.
  if (!readRequestLine(head, text, lineEnd)) return head;
  if (CONTROL.test(text) || hasBareCROrLF(text)) return refused(head, MALFORMED);

  let transferEncoding;
  let upgrade;
  let hosts = 0;
  const raw = head.rawHeaders;
  for (let at = lineEnd + 2; at < text.length;) {
    let end = text.indexOf('\r\n', at);
    if (end === -1) end = text.length;
    const field = parseField(text, at, end, raw);
    if (field === -1) return refused(head, MALFORMED);
    const value = raw[raw.length - 1];
    switch (field) {
      case 1:
        if (head.contentLength !== -1) return refused(head, 'an invalid Content-Length');
        head.contentLength = decimal(value);
        if (head.contentLength === -1) return refused(head, 'an invalid Content-Length');
        break;
      case 2:
        transferEncoding = transferEncoding === undefined ? value : `${transferEncoding}, ${value}`;
        break;
      case 3:
        hosts++;
        head.host = value;
        break;
      case 4:
        connectionTokens(head, value);
        break;
      case 5:
        if (value.toLowerCase() === '100-continue') head.expectContinue = true;
        break;
      case 6:
        upgrade = value;
        break;
    }
    at = end + 2;
  }
  if (transferEncoding !== undefined && head.contentLength !== -1) {
    return refused(head, 'both Content-Length and Transfer-Encoding');
  }
  head.problem = headProblem(1, head.httpVersionMinor, transferEncoding, hosts, head.host);
  // Absolute-form (RFC 9112 §3.2.2): forwarded in origin-form, its authority the Host; other forms checked.
  if (head.problem === null && head.url.charCodeAt(0) !== 0x2f) {
    const target = absoluteTarget(head.method, head.url);
    if (target !== null && target.problem !== undefined) {
      head.problem = target.problem;
    } else if (target !== null) {
      head.url = target.url;
      head.host = target.authority;
      setHost(raw, target.authority);
    }
  }
  head.chunked = transferEncoding !== undefined;
  if (head.connectionUpgrade) head.upgrade = upgrade;
  return head;
}

/**
 * Checks a request line on its own, before the rest of its head has come, so
 * that garbage is refused at once rather than at the header timeout.
 *
 * @param {string} line the request line as latin1, without its CRLF
 * @returns {{status: number, code: string, reason: string} | null} null when it is valid
 */
function requestLineProblem(line) {
  const head = new RequestHead();
  if (CONTROL.test(line) || line.includes('\r') || line.includes('\n')) refused(head, MALFORMED);
  else readRequestLine(head, line, line.length);
  return head.problem;
}

/**
 * Parses a backend's response head (status line and fields).
 *
 * @param {string} text the head as latin1, without its final empty line
 * @returns {{httpVersionMinor: number, status: number, reason: string, rawHeaders: string[],
 *   contentLength: number, chunked: boolean, closeDelimited: boolean,
 *   connectionClose: boolean, connectionKeepAlive: boolean} | null} null when it is not valid HTTP/1.x
 */
function parseResponseHead(text) {
  if (CONTROL.test(text) || hasBareCROrLF(text)) return null;
  let lineEnd = text.indexOf('\r\n');
  if (lineEnd === -1) lineEnd = text.length;
  if (!text.startsWith('HTTP/1.') || lineEnd < 12 || text.charCodeAt(8) !== 0x20) return null;
  const minor = text.charCodeAt(7) - 0x30;
  const status = Number(text.slice(9, 12));
  if ((minor !== 0 && minor !== 1) || !(status >= 100 && status <= 999) || text.charCodeAt(9) === 0x30) return null;
  if (lineEnd > 12 && text.charCodeAt(12) !== 0x20) return null;
  const response = {
    httpVersionMinor: minor,
    status,
    reason: lineEnd > 13 ? text.slice(13, lineEnd) : '',
    rawHeaders: [],
    contentLength: -1,
    chunked: false,
    closeDelimited: false,
    connectionClose: false,
    connectionKeepAlive: false,
    connectionUpgrade: false
  };
  let transferEncoding;
  const raw = response.rawHeaders;
  for (let at = lineEnd + 2; at < text.length;) {
    let end = text.indexOf('\r\n', at);
    if (end === -1) end = text.length;
    const field = parseField(text, at, end, raw);
    if (field === -1) return null;
    const value = raw[raw.length - 1];
    if (field === 1) {
      const length = decimal(value);
      if (length === -1 || (response.contentLength !== -1 && length !== response.contentLength)) return null;
      response.contentLength = length;
    } else if (field === 2) {
      transferEncoding = transferEncoding === undefined ? value : `${transferEncoding}, ${value}`;
    } else if (field === 4) {
      connectionTokens(response, value);
    }
    at = end + 2;
  }
  if (transferEncoding !== undefined) {
    if (response.contentLength !== -1) return null;
    // RFC 9112 §6.3: chunked last frames the body; any other coding reads to the close.
    if (/(?:^|,)[ \t]*chunked[ \t]*$/i.test(transferEncoding)) response.chunked = true;
    else response.closeDelimited = true;
  } else if (response.contentLength === -1) {
    response.closeDelimited = true;
  }
  return response;
}

module.exports = { parseRequestHead, requestLineProblem, parseResponseHead, RequestHead, TOKEN, VALUE };

// Method SP target SP HTTP/1.x into `head`; false (and `head.problem`) when it is not one.
function readRequestLine(head, text, lineEnd) {
  let i = 0;
  while (i < lineEnd && TOKEN[text.charCodeAt(i)] === 1) i++;
  let valid = i > 0 && text.charCodeAt(i) === 0x20;
  if (valid) {
    head.method = text.slice(0, i);
    const targetStart = ++i;
    while (i < lineEnd && TARGET[text.charCodeAt(i)] === 1) i++;
    valid = i > targetStart && text.charCodeAt(i) === 0x20;
    if (valid) head.url = text.slice(targetStart, i);
  }
  const version = valid ? text.slice(i + 1, lineEnd) : '';
  if (version === 'HTTP/1.1') head.httpVersionMinor = 1;
  else if (version === 'HTTP/1.0') head.httpVersionMinor = 0;
  // RFC 9110 §2.5: a higher minor version is served as the highest lila knows.
  else if (/^HTTP\/1\.\d$/.test(version)) head.httpVersionMinor = 1;
  else if (/^HTTP\/[2-9]\.\d$/.test(version)) head.problem = versionNotSupported(version);
  else refused(head, MALFORMED);
  return head.problem === null;
}

// Reads one `name: value` line into raw; returns -1 when it is malformed, else
// which header it is: 1 Content-Length, 2 Transfer-Encoding, 3 Host,
// 4 Connection, 5 Expect, 6 Upgrade, 0 any other. The line holds no control
// byte but HTAB (CONTROL), so every value byte is valid.
function parseField(text, start, end, raw) {
  let i = start;
  while (i < end && TOKEN[text.charCodeAt(i)] === 1) i++;
  // No name, whitespace before the colon, obs-fold, or a byte outside tchar.
  if (i === start || i === end || text.charCodeAt(i) !== 0x3a) return -1;
  const nameEnd = i++;
  while (i < end && (text.charCodeAt(i) === 0x20 || text.charCodeAt(i) === 0x09)) i++;
  const valueStart = i;
  let valueEnd = end;
  while (valueEnd > valueStart && (text.charCodeAt(valueEnd - 1) === 0x20 || text.charCodeAt(valueEnd - 1) === 0x09)) valueEnd--;
  const name = text.slice(start, nameEnd);
  raw.push(name, text.slice(valueStart, valueEnd));
  switch (nameEnd - start) {
    case 14: return isNamed(name, 'content-length') ? 1 : 0;
    case 17: return isNamed(name, 'transfer-encoding') ? 2 : 0;
    case 4: return isNamed(name, 'host') ? 3 : 0;
    case 10: return isNamed(name, 'connection') ? 4 : 0;
    case 6: return isNamed(name, 'expect') ? 5 : 0;
    case 7: return isNamed(name, 'upgrade') ? 6 : 0;
    default: return 0;
  }
}

// RFC 9112 §2.2: CR and LF only come together, ending a line.
function hasBareCROrLF(text) {
  for (let i = text.indexOf('\r'); i !== -1; i = text.indexOf('\r', i + 2)) {
    if (text.charCodeAt(i + 1) !== 0x0a) return true;
  }
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) {
    if (text.charCodeAt(i - 1) !== 0x0d) return true;
  }
  return false;
}

// Connection: close / keep-alive / upgrade, in any case, among other options.
function connectionTokens(message, value) {
  // The usual single option, without lowercasing or splitting.
  if (isNamed(value, 'keep-alive')) {
    message.connectionKeepAlive = true;
    return;
  }
  if (isNamed(value, 'close')) {
    message.connectionClose = true;
    return;
  }
  for (const token of value.toLowerCase().split(',')) {
    const option = token.trim();
    if (option === 'close') message.connectionClose = true;
    else if (option === 'keep-alive') message.connectionKeepAlive = true;
    else if (option === 'upgrade') message.connectionUpgrade = true;
  }
}

// The value of 1 to 15 decimal digits (RFC 9110 §8.6 Content-Length), or -1.
function decimal(text) {
  if (text.length === 0 || text.length > 15) return -1;
  let value = 0;
  for (let i = 0; i < text.length; i++) {
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

// RFC 9110 §15.6.6: a major version lila does not serve over HTTP/1 framing.
function versionNotSupported(version) {
  return { status: 505, code: codes.VERSION_NOT_SUPPORTED, reason: `${version} is not an HTTP/1.x version lila serves` };
}

function refused(head, reason) {
  head.problem = { status: 400, code: codes.BAD_REQUEST, reason };
  return head;
}

function byteTable(allowed) {
  const table = new Uint8Array(256);
  for (let c = 0; c < 256; c++) table[c] = allowed(c) ? 1 : 0;
  return table;
}
