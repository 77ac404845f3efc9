'use strict';

const { isUtf8 } = require('node:buffer');

const HEX = /^[0-9A-Fa-f]{2}$/;
// Names Windows takes for devices whatever their extension (`nul.txt` is NUL).
const WINDOWS_DEVICE = /^(?:con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(?:\.|$)/i;

/**
 * The names a request path asks for under a root, each percent-decoded
 * once (strict UTF-8), or why it asks for nothing lila serves. Refused with
 * 400: a path not starting with `/`, a `%` not followed by two hex digits, a
 * character past a byte, bytes that are no UTF-8 (overlong forms and
 * surrogates included), a `.` or `..` segment (as written or encoded), a `/`
 * decoded from `%2F`, a backslash (as written or `%5C`), a control character
 * (NUL included). Refused with 404: a dotfile or dot-directory anywhere
 * (`/.env`, `/a/.git/config`) but `/.well-known/` as the first segment; on
 * Windows (or with `options.windows`) a `:` (drive letters, alternate data
 * streams), a name ending in `.` or space (which Windows strips), a device
 * name. Empty segments (`//`) are skipped, as nginx's `merge_slashes` does.
 *
 * @param {string} path the request path as received (percent-encoded, one byte per character as the
 *   engines read a head: latin1), without its query
 * @param {{windows?: boolean}} [options]
 * @returns {{segments: string[], slash: boolean} | {status: 400 | 404, why: string}}
 *   `slash`: the path ends with `/`
 */
function requestSegments(path, options = {}) {
  if (typeof path !== 'string' || path.charCodeAt(0) !== 0x2f) return refused(400, 'the path does not begin with "/"');
  const segments = [];
  for (const raw of path.split('/')) {
    if (raw === '') continue;
    const segment = decodeSegment(raw);
    if (typeof segment !== 'string') return segment;
    const problem = badSegment(segment);
    if (problem !== null) return refused(400, problem);
    segments.push(segment);
  }
  const windows = options.windows === undefined ? process.platform === 'win32' : options.windows;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    if (segment.charCodeAt(0) === 0x2e && !(i === 0 && segment === '.well-known')) {
      return refused(404, 'a dotfile or dot-directory');
    }
    if (windows && windowsAlias(segment)) return refused(404, 'a name Windows reads as another (":", a trailing "." or space, a device)');
  }
  return { segments, slash: path.charCodeAt(path.length - 1) === 0x2f };
}

/**
 * Why a file name (a decoded segment) could never be asked for, or null:
 * `.` and `..`, a `/` or `\`, a control character.
 *
 * @param {string} name
 * @returns {string | null}
 */
function badSegment(name) {
  if (name === '.' || name === '..') return 'a "." or ".." segment';
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c === 0x2f) return 'a "/" encoded in a segment (%2F)';
    if (c === 0x5c) return 'a backslash';
    if (c < 0x20 || c === 0x7f) return 'a control character';
  }
  return null;
}

/**
 * A request path percent-decoded as `requestSegments` decodes it (its
 * bytes read as UTF-8), for showing; null when it is no UTF-8.
 *
 * @param {string} path as received (latin1)
 * @returns {string | null}
 */
function decodedPath(path) {
  const parts = path.split('/').map(decodeSegment);
  return parts.every((part) => typeof part === 'string') ? parts.join('/') : null;
}

module.exports = { requestSegments, badSegment, decodedPath };

function decodeSegment(raw) {
  let plain = true;
  for (let i = 0; i < raw.length && plain; i++) plain = raw.charCodeAt(i) < 0x80 && raw.charCodeAt(i) !== 0x25;
  if (plain) return raw;
  const bytes = Buffer.allocUnsafe(raw.length);
  let length = 0;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x25) {
      const hex = raw.slice(i + 1, i + 3);
      if (!HEX.test(hex)) return refused(400, 'a "%" not followed by two hex digits');
      bytes[length++] = parseInt(hex, 16);
      i += 2;
    } else if (c > 0xff) {
      return refused(400, 'a character past a byte');
    } else {
      bytes[length++] = c;
    }
  }
  const decoded = bytes.subarray(0, length);
  if (!isUtf8(decoded)) return refused(400, 'bytes that are no UTF-8');
  return decoded.toString('utf8');
}

function windowsAlias(segment) {
  const last = segment.charCodeAt(segment.length - 1);
  return segment.includes(':') || last === 0x2e || last === 0x20 || WINDOWS_DEVICE.test(segment);
}

function refused(status, why) {
  return { status, why };
}
