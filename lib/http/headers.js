'use strict';

// RFC 9110 §7.6.1, plus the non-standard Proxy-Connection. Trailer is
// end-to-end (it announces the trailer fields), so it passes.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'transfer-encoding',
  'upgrade'
]);
// The names forwardRequestHeaders acts on (hop-by-hop, Host, X-Forwarded-*,
// Forwarded), by length: a header is matched against them without lowercasing it.
const ACTED_ON_BY_LENGTH = [];
const FORWARDING = ['host', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'forwarded', 'x-forwarded-client-cert'];
for (const name of [...HOP_BY_HOP, ...FORWARDING]) {
  (ACTED_ON_BY_LENGTH[name.length] ??= []).push(name);
}
// The last Forwarded element built, for the next request of the same client and host.
let lastElement = { clientAddress: null, host: null, scheme: null, element: '' };
// RFC 9110 §5.6.2 tchar: a Forwarded value made only of these needs no quotes.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// What an X-Forwarded-Client-Cert value may hold unquoted, as Envoy writes its URI and DNS values.
const XFCC_PLAIN = /^[^,;="\\]*$/;

/**
 * Builds the header list for the upstream request from the client's raw
 * headers: hop-by-hop headers (and every name `Connection` lists) are
 * dropped, `X-Forwarded-For` and RFC 7239 `Forwarded` are appended to,
 * `X-Forwarded-Proto` and `X-Forwarded-Host` are set. Host and every other
 * header keep their case and order. A chunked request body is sent on chunked, so that framing is
 * kept as the one `Transfer-Encoding` lila writes itself. The client's own
 * `X-Forwarded-Client-Cert` is always dropped (nobody forges one), and
 * lila's set when the client has a verified certificate.
 *
 * @param {string[]} rawHeaders `[name, value, name, value, ...]` as received
 * @param {string | undefined} clientAddress the client's IP address
 * @param {'http' | 'https'} [scheme] what the client speaks to lila (default http)
 * @param {string | null} [clientCert] the `X-Forwarded-Client-Cert` value of the client's
 *   verified certificate (`forwardedClientCert`); null: none
 * @returns {string[]} a new raw header list
 */
function forwardRequestHeaders(rawHeaders, clientAddress, scheme = 'http', clientCert = null) {
  const listed = connectionOptions(rawHeaders);
  const out = [];
  let forwardedFor = null;
  let forwarded = null;
  let host = null;
  let chunked = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    const value = rawHeaders[i + 1];
    const lower = listed === null ? actedOn(name) : name.toLowerCase();
    if (lower === null) {
      out.push(name, value);
      continue;
    }
    if (isHopByHop(lower, listed)) {
      if (lower === 'transfer-encoding') chunked = true;
      continue;
    }
    if (lower === 'x-forwarded-for') {
      forwardedFor = forwardedFor === null ? value : `${forwardedFor}, ${value}`;
      continue;
    }
    if (lower === 'forwarded') {
      forwarded = forwarded === null ? value : `${forwarded}, ${value}`;
      continue;
    }
    if (lower === 'x-forwarded-proto' || lower === 'x-forwarded-host' || lower === 'x-forwarded-client-cert') continue;
    if (lower === 'host') host = value;
    out.push(name, value);
  }
  if (chunked) out.push('Transfer-Encoding', 'chunked');
  if (clientAddress) {
    forwardedFor = forwardedFor === null ? clientAddress : `${forwardedFor}, ${clientAddress}`;
  }
  if (forwardedFor !== null) out.push('X-Forwarded-For', forwardedFor);
  out.push('X-Forwarded-Proto', scheme);
  if (host !== null) out.push('X-Forwarded-Host', host);
  const element = forwardedElement(clientAddress, host, scheme);
  out.push('Forwarded', forwarded === null ? element : `${forwarded}, ${element}`);
  if (clientCert !== null) out.push('X-Forwarded-Client-Cert', clientCert);
  return out;
}

/**
 * The `X-Forwarded-Client-Cert` value of a client's verified certificate, in
 * Envoy's format (as its `forward_client_cert_details: SANITIZE_SET` with the
 * subject, URI and DNS details): `Hash=<sha256 of the DER, hex>;Subject="<RFC
 * 2253>"`, then `;URI=<uri>` for each URI SAN and `;DNS=<name>` for each DNS
 * SAN, values holding `,;="\` quoted. Made once a connection: the
 * certificate keeps it.
 *
 * @param {import('../net/client-certificate').ClientCertificate | null} certificate
 * @returns {string | null} null without a certificate
 */
function forwardedClientCert(certificate) {
  if (certificate === null) return null;
  if (certificate.xfcc === null) certificate.xfcc = clientCertElement(certificate);
  return certificate.xfcc;
}

/**
 * One `X-Forwarded-Client-Cert` element (see `forwardedClientCert`).
 *
 * @param {{hash: string, subject: string, uris: string[], dns: string[]}} certificate the subject escaped as RFC
 *   2253 writes it (`"` as `\"`), so that it stands between quotes as it is
 * @returns {string} e.g. `Hash=9f86...;Subject="CN=api,O=Example";URI=spiffe://example.org/ns/prod/sa/api;DNS=api.internal`
 */
function clientCertElement(certificate) {
  let element = `Hash=${certificate.hash};Subject="${certificate.subject}"`;
  for (const uri of certificate.uris) element += `;URI=${xfccValue(uri)}`;
  for (const name of certificate.dns) element += `;DNS=${xfccValue(name)}`;
  return element;
}

/**
 * Builds lila's RFC 7239 `Forwarded` element for one request:
 * `for=10.0.0.1;host=example.com;proto=http`, quoting values that are not
 * tokens (IPv6 addresses become `for="[2001:db8::1]"`).
 *
 * @param {string | undefined} clientAddress `unknown` when missing
 * @param {string | null} host the client's Host header, left out when null
 * @param {'http' | 'https'} [scheme] default http
 * @returns {string}
 */
function forwardedElement(clientAddress, host, scheme = 'http') {
  // Requests on one connection, and often from one client, repeat the same triple.
  if (clientAddress === lastElement.clientAddress && host === lastElement.host && scheme === lastElement.scheme) {
    return lastElement.element;
  }
  const element = buildForwardedElement(clientAddress, host, scheme);
  lastElement = { clientAddress, host, scheme, element };
  return element;
}

function buildForwardedElement(clientAddress, host, scheme) {
  const node = clientAddress === undefined ? 'unknown'
    : clientAddress.includes(':') ? `[${clientAddress}]` : clientAddress;
  let element = `for=${forwardedValue(node)}`;
  if (host !== null) element += `;host=${forwardedValue(host)}`;
  return `${element};proto=${scheme}`;
}

/**
 * Returns a copy of a forwarded header list whose Host is `authority`
 * (added when the client sent none).
 *
 * @param {string[]} headers as returned by `forwardRequestHeaders`
 * @param {string} authority `host[:port]`
 * @returns {string[]}
 */
function withHost(headers, authority) {
  const out = [];
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].length !== 4 || headers[i].toLowerCase() !== 'host') out.push(headers[i], headers[i + 1]);
  }
  out.push('Host', authority);
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
    const name = rawHeaders[i];
    const hopByHop = listed === null ? HOP_BY_HOP.has(actedOn(name)) : isHopByHop(name.toLowerCase(), listed);
    if (!hopByHop) out.push(name, rawHeaders[i + 1]);
  }
  return out;
}

/**
 * Points `Location` and `Content-Location` back at lila when they name the
 * backend's own address, as nginx's `proxy_redirect default` does: a backend
 * redirecting to `http://10.0.0.2:8080/dir/` (its own address, as nginx's
 * `port_in_redirect` writes it) would send the client around lila. The
 * backend's origin is `http://` and its host and port as lila connects to it
 * (port 80 may be left out, an IPv6 address is in brackets); it becomes
 * `scheme://host` of the client's request. Every other value is kept
 * (relative references, other hosts), and so is everything when the request
 * had no Host (HTTP/1.0). Nothing is allocated for a response without these headers.
 *
 * @param {string[]} headers `[name, value, ...]` as forwarded to the client
 * @param {{host: string, port: number}} backend the backend that answered
 * @param {string} scheme the client's scheme: `http`, or `https` on a TLS listener
 * @param {string | undefined} host the client's Host header
 * @returns {string[]} `headers` when nothing changes, else a new list
 */
function rewriteLocation(headers, backend, scheme, host) {
  if (host === undefined) return headers;
  let out = headers;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i];
    if (!isNamed(name, 'location') && !isNamed(name, 'content-location')) continue;
    const value = headers[i + 1];
    const rest = afterBackendOrigin(value, backend);
    if (rest === -1) continue;
    if (out === headers) out = headers.slice();
    out[i + 1] = `${scheme}://${host}${value.slice(rest)}`;
  }
  return out;
}

/**
 * Copies a raw header list without the fields of one name.
 *
 * @param {string[]} headers `[name, value, ...]`
 * @param {string} name lowercase
 * @returns {string[]} a new raw header list
 */
function withoutField(headers, name) {
  const out = [];
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].length !== name.length || headers[i].toLowerCase() !== name) out.push(headers[i], headers[i + 1]);
  }
  return out;
}

module.exports = {
  isNamed,
  forwardRequestHeaders,
  forwardResponseHeaders,
  withoutField,
  forwardedElement,
  forwardedClientCert,
  clientCertElement,
  withHost,
  rewriteLocation
};

// The header names listed in Connection headers, lowercased; null when none.
function connectionOptions(rawHeaders) {
  let listed = null;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (!isNamed(rawHeaders[i], 'connection')) continue;
    const value = rawHeaders[i + 1];
    // The usual single option names no header.
    if (isNamed(value, 'keep-alive') || isNamed(value, 'close')) continue;
    for (const token of value.toLowerCase().split(',')) {
      const option = token.trim();
      if (option !== '' && !HOP_BY_HOP.has(option)) (listed ??= new Set()).add(option);
    }
  }
  return listed;
}

// A SAN value as a header carries it: bytes past printable ASCII percent-encoded, quoted when it holds a separator.
function xfccValue(value) {
  let text = value;
  if (!/^[\x21-\x7e]*$/.test(text)) {
    text = '';
    for (const byte of Buffer.from(value)) {
      text += byte > 0x20 && byte < 0x7f ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return XFCC_PLAIN.test(text) ? text : `"${text.replace(/["\\]/g, '\\$&')}"`;
}

function forwardedValue(value) {
  return TOKEN.test(value) ? value : `"${value.replace(/["\\]/g, '\\$&')}"`;
}

function isHopByHop(lowerName, listed) {
  return HOP_BY_HOP.has(lowerName) || (listed !== null && listed.has(lowerName));
}

// Which name of ACTED_ON_BY_LENGTH `name` is, in any case, or null; without allocating.
function actedOn(name) {
  const candidates = ACTED_ON_BY_LENGTH[name.length];
  if (candidates === undefined) return null;
  for (let i = 0; i < candidates.length; i++) {
    if (isNamed(name, candidates[i])) return candidates[i];
  }
  return null;
}

// Whether a header name is `lower` (letters and '-' only) in any case, without
// allocating: OR 0x20 lowercases a letter and keeps '-'.
function isNamed(name, lower) {
  if (name.length !== lower.length) return false;
  for (let i = 0; i < lower.length; i++) {
    if ((name.charCodeAt(i) | 0x20) !== lower.charCodeAt(i)) return false;
  }
  return true;
}

// Where the path of a URI starts when its scheme and authority are the
// backend's own, as lila connects to it (http); -1 when they are not.
function afterBackendOrigin(value, backend) {
  if (value.length < 8 || value.slice(0, 7).toLowerCase() !== 'http://') return -1;
  let end = 7;
  while (end < value.length && value[end] !== '/' && value[end] !== '?' && value[end] !== '#') end++;
  const authority = value.slice(7, end).toLowerCase();
  const host = backend.host.includes(':') ? `[${backend.host.toLowerCase()}]` : backend.host.toLowerCase();
  if (authority === `${host}:${backend.port}` || (backend.port === 80 && authority === host)) return end;
  return -1;
}
