'use strict';

/**
 * A text with every UTF-8 byte past printable ASCII written `\XX` (upper-case hex), as
 * OpenSSL prints a certificate's subject: `CN=Jürgen` is `CN=J\C3\BCrgen`. The subject a
 * client certificate shows (net/client-certificate.js) and the patterns that match it
 * (actions/client-cert-rules.js) are both spelt so, with this one function.
 *
 * @param {string} text
 * @returns {string}
 */
function escapedPastAscii(text) {
  if (/^[\x20-\x7e]*$/.test(text)) return text;
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0);
    if (code >= 0x20 && code <= 0x7e) out += char;
    else for (const byte of Buffer.from(char)) out += `\\${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

module.exports = { escapedPastAscii };
