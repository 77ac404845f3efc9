'use strict';

// RFC 9110 §7.6.1, plus Proxy-Connection and Trailer, which no next hop should see.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade'
]);

/**
 * Builds the header list for the upstream request from the client's raw
 * headers: hop-by-hop headers (and every name `Connection` lists) are
 * dropped, `X-Forwarded-For` is appended to, `X-Forwarded-Proto` and
 * `X-Forwarded-Host` are set. Host and every other header keep their case
 * and order. A chunked request body is sent on chunked, so that framing is
 * kept as the one `Transfer-Encoding` lila writes itself.
 *
 * @param {string[]} rawHeaders `[name, value, name, value, ...]` as received
 * @param {string | undefined} clientAddress the client's IP address
 * @returns {string[]} a new raw header list
 */
function forwardRequestHeaders(rawHeaders, clientAddress) {
  const listed = connectionOptions(rawHeaders);
  const out = [];
  let forwardedFor = null;
  let host = null;
  let chunked = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    const value = rawHeaders[i + 1];
    const lower = name.toLowerCase();
    if (isHopByHop(lower, listed)) {
      if (lower === 'transfer-encoding') chunked = true;
      continue;
    }
    if (lower === 'x-forwarded-for') {
      forwardedFor = forwardedFor === null ? value : `${forwardedFor}, ${value}`;
      continue;
    }
    if (lower === 'x-forwarded-proto' || lower === 'x-forwarded-host') continue;
    if (lower === 'host') host = value;
    out.push(name, value);
  }
  if (chunked) out.push('Transfer-Encoding', 'chunked');
  if (clientAddress) {
    forwardedFor = forwardedFor === null ? clientAddress : `${forwardedFor}, ${clientAddress}`;
  }
  if (forwardedFor !== null) out.push('X-Forwarded-For', forwardedFor);
  out.push('X-Forwarded-Proto', 'http');
  if (host !== null) out.push('X-Forwarded-Host', host);
  return out;
}

/**
 * Copies a backend's raw response headers without the hop-by-hop ones, so
 * lila's own connection to the client frames and manages the response.
 *
 * @param {string[]} rawHeaders `[name, value, ...]` as received from the backend
 * @returns {string[]} a new raw header list
 */
function forwardResponseHeaders(rawHeaders) {
  const listed = connectionOptions(rawHeaders);
  const out = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (!isHopByHop(rawHeaders[i].toLowerCase(), listed)) out.push(rawHeaders[i], rawHeaders[i + 1]);
  }
  return out;
}

module.exports = { forwardRequestHeaders, forwardResponseHeaders };

// The header names listed in Connection headers, lowercased; null when none.
function connectionOptions(rawHeaders) {
  let listed = null;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].length !== 10 || rawHeaders[i].toLowerCase() !== 'connection') continue;
    for (const token of rawHeaders[i + 1].split(',')) {
      const option = token.trim().toLowerCase();
      if (option !== '' && !HOP_BY_HOP.has(option)) (listed ??= new Set()).add(option);
    }
  }
  return listed;
}

function isHopByHop(lowerName, listed) {
  return HOP_BY_HOP.has(lowerName) || (listed !== null && listed.has(lowerName));
}
