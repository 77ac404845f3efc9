'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const { parseHash, verifyPassword, decoyOf } = require('./password-hash');
const { LilaError, codes } = require('../errors');

// Credentials already checked, remembered by their sha256 so that a browser sending them
// with every request costs one hash, not one each time; the oldest go first past this.
const MAX_REMEMBERED = 1024;
const CREDENTIALS = /^basic +([A-Za-z0-9+/]+=*) *$/i;
const COLON = 0x3a;

/**
 * `--basic-auth <file>`: HTTP Basic authentication (RFC 7617) against an
 * htpasswd file, read when the route is built (at startup and at each
 * reload, which also forgets what was remembered). A request without the
 * right user and password gets 401 with `WWW-Authenticate`; the backend
 * never sees the `Authorization` field.
 *
 * Every check costs one hash, an unknown user's too (against a decoy of the
 * file's first hash), and compares in constant time: neither the time of an
 * answer nor its words tell which users exist.
 */
class BasicAuth {
  /**
   * @param {string | undefined} file the htpasswd file
   * @param {string} realm what browsers show the user
   * @param {string} where names the route, for messages
   * @returns {BasicAuth | null} null when not asked for
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` (the file does not read), or
   *   `LILA_ERR_CONFIG` naming `file:line` (a line is not `user:hash` of a kind lila takes)
   */
  static from(file, realm, where) {
    if (file === undefined) return null;
    return new BasicAuth(String(file), realm, where);
  }

  constructor(file, realm, where) {
    this.users = readUsers(file, where);
    this.decoy = decoyOf(this.users.values().next().value);
    this.challenge = ['WWW-Authenticate', `Basic realm="${realm.replace(/["\\]/g, '\\$&')}", charset="UTF-8"`];
    /** sha256 of `user:password` → the user, for the credentials that were right. */
    this.remembered = new Map();
    /** The checks running, by the same key: the same credentials at once are checked once. */
    this.checking = new Map();
  }

  /**
   * @param {import('./request-view')} view gets `user`, the user let in (for the access line)
   * @returns {LilaError | null | Promise<LilaError | null>} null: the credentials are right
   */
  check(view) {
    const match = CREDENTIALS.exec(view.header('authorization') || '');
    const decoded = match === null ? null : Buffer.from(match[1], 'base64');
    const colon = decoded === null ? -1 : decoded.indexOf(COLON);
    if (colon === -1) return this.refusal('credentials are needed');
    const key = crypto.createHash('sha256').update(decoded).digest('base64');
    const known = this.remembered.get(key);
    if (known !== undefined) {
      // The most recently used go last, and leave last.
      this.remembered.delete(key);
      this.remembered.set(key, known);
      view.user = known;
      return null;
    }
    const user = decoded.subarray(0, colon).toString('utf8');
    let checking = this.checking.get(key);
    if (checking === undefined) {
      checking = this.verify(key, user, decoded.subarray(colon + 1));
      this.checking.set(key, checking);
    }
    // Each request gets an answer of its own.
    return checking.then((right) => {
      if (right !== true) return right === false ? this.refusal('wrong user name or password') : busy(right);
      view.user = user;
      return null;
    });
  }

  /**
   * @param {string[]} headers `[name, value, ...]` as the backend would get them
   * @returns {string[]} without `Authorization`
   */
  requestHeaders(headers) {
    let out = headers;
    for (let i = out.length - 2; i >= 0; i -= 2) {
      if (out[i].length !== 13 || out[i].toLowerCase() !== 'authorization') continue;
      if (out === headers) out = headers.slice();
      out.splice(i, 2);
    }
    return out;
  }

  /** @returns {Promise<boolean | Error>} an error when no thread could check (too many waiting) */
  async verify(key, user, password) {
    const hash = this.users.get(user);
    let right;
    try {
      right = await verifyPassword(hash === undefined ? this.decoy : hash, password);
    } catch (err) {
      return err;
    } finally {
      this.checking.delete(key);
    }
    if (!right || hash === undefined) return false;
    if (this.remembered.size >= MAX_REMEMBERED) this.remembered.delete(this.remembered.keys().next().value);
    this.remembered.set(key, user);
    return true;
  }

  refusal(why) {
    return Object.assign(new LilaError(codes.UNAUTHORIZED, why, 401), { fields: this.challenge });
  }
}

module.exports = BasicAuth;

// A check that could not run: 503, and the client tries again.
function busy(err) {
  const retryAfter = err.retryAfter === undefined ? 1 : err.retryAfter;
  return Object.assign(new LilaError(codes.RESOURCES, `the password could not be checked: ${err.message}`, 503), { retryAfter });
}

// user:hash lines; # comments and blank lines skipped, as Apache reads them.
function readUsers(file, where) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new LilaError(codes.INVALID_OPTION, `${where}: --basic-auth: cannot read "${file}": ${err.code || err.message}`);
  }
  const users = new Map();
  const lines = text.split('\n');
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fail = (problem) => new LilaError(codes.CONFIG, `${file}:${index + 1}: ${problem}`);
    const colon = line.indexOf(':');
    if (colon <= 0) throw fail('a line is user:hash, as htpasswd writes it');
    const user = line.slice(0, colon);
    if (users.has(user)) throw fail(`user "${user}" is given twice`);
    try {
      users.set(user, parseHash(line.slice(colon + 1)));
    } catch (err) {
      throw fail(`user "${user}": ${err.message}`);
    }
  }
  if (users.size === 0) throw new LilaError(codes.CONFIG, `${file}: no user:hash line: every request would get 401`);
  return users;
}
