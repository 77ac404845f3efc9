'use strict';

const { codes } = require('../errors');

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
  const raw = request.rawHeaders;
  let host;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length === 4 && raw[i].toLowerCase() === 'host') {
      hosts++;
      host = raw[i + 1];
    }
  }
  return headProblem(request.httpVersionMajor, request.httpVersionMinor, request.headers['transfer-encoding'], hosts, host);
}

/**
 * The checks of `requestProblem`, on what a parser read from the head.
 *
 * @param {number} major the HTTP version
 * @param {number} minor
 * @param {string | undefined} transferEncoding every Transfer-Encoding value, joined by commas
 * @param {number} hosts how many Host fields
 * @param {string | undefined} host the last Host value
 * @returns {{status: number, code: string, reason: string} | null} null when the head is acceptable
 */
function headProblem(major, minor, transferEncoding, hosts, host) {
  // Node reads a missing version as 0.9, and takes 2.0 in an HTTP/1 request line (RFC 9110 §15.6.6:
  // 505). A higher minor version is served as HTTP/1.1 (RFC 9110 §2.5).
  if (major === 0) return { status: 400, code: codes.BAD_REQUEST, reason: `HTTP/${major}.${minor} is not an HTTP/1.x version lila serves` };
  if (major !== 1) {
    return { status: 505, code: codes.VERSION_NOT_SUPPORTED, reason: `HTTP/${major}.${minor} is not an HTTP/1.x version lila serves` };
  }
  if (transferEncoding !== undefined) {
    // RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
    if (minor === 0) return { status: 400, code: codes.BAD_REQUEST, reason: 'Transfer-Encoding in an HTTP/1.0 request' };
    const codings = transferEncoding.toLowerCase().split(',').map((coding) => coding.trim());
    // RFC 9112 6.3: without chunked last, the length cannot be known; 7.1: chunked only once.
    if (codings[codings.length - 1] !== 'chunked' || codings.indexOf('chunked') !== codings.length - 1) {
      return { status: 400, code: codes.BAD_REQUEST, reason: 'a Transfer-Encoding whose last coding is not chunked, or with chunked twice' };
    }
    if (codings.length > 1) return { status: 501, code: codes.CODING_NOT_SUPPORTED, reason: `the transfer coding "${transferEncoding}" is not supported` };
  }
  // RFC 9112 3.2: no Host in HTTP/1.1, several, or an invalid one: 400.
  if (hosts === 0) return minor === 0 ? null : { status: 400, code: codes.BAD_REQUEST, reason: 'an HTTP/1.1 request without Host' };
  if (hosts > 1) return { status: 400, code: codes.BAD_REQUEST, reason: 'several Host headers' };
  if (!HOST.test(host)) return { status: 400, code: codes.BAD_REQUEST, reason: 'an invalid Host' };
  return null;
}

/**
 * Whether a Host value (or a request target's authority) is a valid RFC 3986 host and port.
 *
 * @param {string} host
 * @returns {boolean}
 */
function validHost(host) {
  return HOST.test(host);
}

module.exports = { requestProblem, headProblem, validHost };
