'use strict';

const { codes } = require('./errors');

// RFC 3986 host (reg-name, IPv4, or an IP literal in brackets) and an optional port.
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::[0-9]*)?$/;

/**
 * What RFC 9112 says a server must refuse in a request head that Node's
 * parser lets through, checked before anything is forwarded: these are the
 * ways to make lila and a backend disagree on where a request ends, or on
 * which host it is for (request smuggling).
 *
 * @param {import('node:http').IncomingMessage} request
 * @returns {{status: number, code: string, reason: string} | null} null when the head is acceptable
 */
function requestProblem(request) {
  // Node reads a missing version as 0.9 and takes 1.2 or 2.0 in an HTTP/1 request line.
  if (request.httpVersionMajor !== 1 || request.httpVersionMinor > 1) {
    return { status: 400, code: codes.BAD_REQUEST, reason: `HTTP/${request.httpVersion} is not an HTTP/1.x version lila serves` };
  }
  const transferEncoding = request.headers['transfer-encoding'];
  if (transferEncoding !== undefined) {
    // RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
    if (request.httpVersionMinor === 0) return { status: 400, code: codes.BAD_REQUEST, reason: 'Transfer-Encoding in an HTTP/1.0 request' };
    const codings = transferEncoding.toLowerCase().split(',').map((coding) => coding.trim());
    // RFC 9112 6.3: without chunked last, the length cannot be known.
    if (codings[codings.length - 1] !== 'chunked') {
      return { status: 400, code: codes.BAD_REQUEST, reason: 'a Transfer-Encoding whose last coding is not chunked' };
    }
    if (codings.length > 1) return { status: 501, code: codes.CODING_NOT_SUPPORTED, reason: `the transfer coding "${transferEncoding}" is not supported` };
  }
  return hostProblem(request);
}

module.exports = { requestProblem };

// RFC 9112 3.2: no Host in HTTP/1.1, several, or an invalid one: 400.
function hostProblem(request) {
  const raw = request.rawHeaders;
  let host;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length === 4 && raw[i].toLowerCase() === 'host') {
      count++;
      host = raw[i + 1];
    }
  }
  if (count === 0) return request.httpVersionMinor === 0 ? null : { status: 400, code: codes.BAD_REQUEST, reason: 'an HTTP/1.1 request without Host' };
  if (count > 1) return { status: 400, code: codes.BAD_REQUEST, reason: 'several Host headers' };
  if (!HOST.test(host)) return { status: 400, code: codes.BAD_REQUEST, reason: 'an invalid Host' };
  return null;
}
