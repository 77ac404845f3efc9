'use strict';

const { escapedPastAscii } = require('../utf8-escape');
const { LilaError, codes } = require('../errors');

// A URI pattern starts with its scheme (spiffe://, https://, urn:).
const URI_PATTERN = /^[A-Za-z][A-Za-z0-9+.-]*:/;
// A DNS name pattern: labels of letters, digits, `-`, `_` and `*`.
const DNS_PATTERN = /^[A-Za-z0-9*_-]+(\.[A-Za-z0-9*_-]+)*$/;

/**
 * `--allow-client-cert PATTERN` (repeatable): a route served only to clients
 * whose verified certificate (`--tls-client-ca`) matches one pattern: its
 * subject, as OpenSSL's one-line form writes it (`CN=ops,O=Example`,
 * compared as the same set of attributes, whatever their order), or one of
 * its subjectAltNames: a URI (`spiffe://example.org/ns/prod/*`) or a DNS
 * name (`*.internal.example`), where `*` stands for one segment or part of
 * one (between `/` in a URI, between `.` in a DNS name).
 */
class ClientCertRules {
  /**
   * @param {string[] | undefined} patterns as given
   * @param {string} where names the route, for messages
   * @returns {ClientCertRules | null} null when none is given
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming a pattern that is not one
   */
  static from(patterns, where) {
    if (patterns === undefined) return null;
    const rules = new ClientCertRules();
    for (const pattern of patterns) rules.add(pattern.trim(), where);
    return rules;
  }

  constructor() {
    /** Subjects allowed, each a sorted list of `TYPE=value`. */
    this.subjects = [];
    this.uris = [];
    this.dns = [];
  }

  /**
   * @param {string} pattern one `--allow-client-cert`: a URI when it starts with a scheme, a subject
   *   when it has `=`, else a DNS name
   * @param {string} where names the route, for messages
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for a pattern that is none of them
   */
  add(pattern, where) {
    if (URI_PATTERN.test(pattern)) {
      this.uris.push(segmentPattern(pattern, '/', ''));
    } else if (pattern.includes('=')) {
      const attributes = subjectAttributes(pattern);
      if (attributes === null) throw invalid(where, pattern);
      this.subjects.push(attributes.join('\n'));
    } else if (DNS_PATTERN.test(pattern)) {
      this.dns.push(segmentPattern(pattern, '.', 'i'));
    } else {
      throw invalid(where, pattern);
    }
  }

  /**
   * @param {{attributes: string[][], uris: string[], dns: string[]} | null} certificate the client's verified
   *   certificate (`net/client-certificate.js`), null without one
   * @returns {boolean}
   */
  admits(certificate) {
    if (certificate === null || certificate === undefined) return false;
    if (this.subjects.length > 0) {
      const subject = certificate.attributes.map(([type, value]) => `${type.toUpperCase()}=${value}`).sort().join('\n');
      if (this.subjects.includes(subject)) return true;
    }
    return this.uris.some((uri) => certificate.uris.some((value) => uri.test(value))) ||
      this.dns.some((name) => certificate.dns.some((value) => name.test(value)));
  }
}

module.exports = ClientCertRules;

// `CN=ops, O=Example` as a sorted list of `TYPE=value`, types upper case; null when it is not one.
// Attributes are separated by `,` (or `+` in a multi-valued RDN) unless escaped (`\,`), as RFC 4514 writes them.
function subjectAttributes(text) {
  const parts = [''];
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '\\' && i + 1 < text.length) parts[parts.length - 1] += char + text[++i];
    else if (char === ',' || char === '+') parts.push('');
    else parts[parts.length - 1] += char;
  }
  const attributes = [];
  for (const part of parts) {
    const equals = part.indexOf('=');
    const type = part.slice(0, equals).trim();
    if (equals <= 0 || !/^[A-Za-z][A-Za-z0-9-]*$/.test(type)) return null;
    attributes.push(`${type.toUpperCase()}=${escapedPastAscii(part.slice(equals + 1).trim())}`);
  }
  return attributes.sort();
}

// A pattern whose `*` stands for one or more characters other than `separator` (`/` or `.`).
function segmentPattern(pattern, separator, flags) {
  const escaped = pattern.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
  return new RegExp(`^${escaped.join(`[^${separator}]+`)}$`, flags);
}

function invalid(where, pattern) {
  return new LilaError(codes.INVALID_OPTION, `${where}: --allow-client-cert "${pattern}" is a subject (CN=ops,O=Example), ` +
    'a URI (spiffe://example.org/ns/prod/*) or a DNS name (*.internal.example)');
}
