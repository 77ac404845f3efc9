'use strict';

/**
 * Decodes base64url as JOSE writes it (RFC 7515 §2, RFC 4648 §5): the URL
 * alphabet only, no padding, no white space, and the unused bits of the
 * last character zero, so that one string is the only spelling of its
 * bytes. Node's own decoder skips what it does not know; a token that
 * another spelling of the same bytes would pass is refused here instead.
 *
 * @param {string} text
 * @returns {Buffer | null} null when `text` is not strict base64url
 */
function decodeBase64url(text) {
  if (typeof text !== 'string' || text.length % 4 === 1) return null;
  const bytes = Buffer.from(text, 'base64url');
  // Encoding back gives the one canonical spelling: anything else in `text` shows as a difference.
  return bytes.toString('base64url') === text ? bytes : null;
}

/**
 * @param {Buffer | string} bytes a string as UTF-8
 * @returns {string} base64url without padding
 */
function encodeBase64url(bytes) {
  return Buffer.from(bytes).toString('base64url');
}

module.exports = { decodeBase64url, encodeBase64url };
