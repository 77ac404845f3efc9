'use strict';

const crypto = require('node:crypto');
const { promisify } = require('node:util');
const { parseBcrypt } = require('./bcrypt');
const { hashWorkers } = require('./hash-workers');
const { LilaError, codes } = require('../errors');

const scrypt = promisify(crypto.scrypt);

// lila's own hashes: scrypt in the PHC string format (as Python's passlib writes it),
// log2 of N, the block size and parallelism, then salt and hash in base64 without padding.
const SCRYPT = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]{11,88})\$([A-Za-z0-9+/]{22,88})$/;
// ln=15, r=8, p=1: 32 MiB and about as long as bcrypt at cost 10 (README's "What a route can do").
const SCRYPT_DEFAULTS = { ln: 15, r: 8, p: 1 };
const SALT_BYTES = 16;
const HASH_BYTES = 32;
// What a check may cost, at most: bcrypt's cost as htpasswd -B allows it; scrypt's memory.
const MAX_BCRYPT_COST = 17;
const MAX_SCRYPT_MEMORY = 256 * 1024 * 1024;
const SUPPORTED = 'lila takes bcrypt ($2y$, $2b$, $2a$: htpasswd -B) and scrypt ($scrypt$: lila hash-password)';

// Hashes lila refuses, by how they start: what to call them in a message.
const OTHER_KINDS = [
  ['$apr1$', 'an MD5 (apr1) hash'],
  ['{SHA}', 'a SHA-1 hash'],
  ['$1$', 'an MD5-crypt hash'],
  ['$5$', 'a SHA-256-crypt hash'],
  ['$6$', 'a SHA-512-crypt hash'],
  ['$2x$', "a bcrypt hash of crypt_blowfish's buggy $2x$"],
  ['$argon2', 'an Argon2 hash'],
  ['$y$', 'a yescrypt hash']
];

/**
 * Reads a password hash of an htpasswd line.
 *
 * @param {string} text
 * @returns {{kind: 'bcrypt', minor: string, cost: number, salt: Buffer, hash: Buffer}
 *   | {kind: 'scrypt', ln: number, r: number, p: number, salt: Buffer, hash: Buffer}}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` saying what it is and what lila takes
 */
function parseHash(text) {
  if (/^\$2[aby]\$/.test(text)) {
    const setting = parseBcrypt(text);
    if (setting === null) throw invalid(`"${text}" is not a bcrypt hash: $2y$, two digits of cost, 53 characters of salt and hash`);
    if (setting.cost > MAX_BCRYPT_COST) throw invalid(`bcrypt cost ${setting.cost} would take too long to check: 4 to ${MAX_BCRYPT_COST}, as htpasswd -B -C makes`);
    return { kind: 'bcrypt', ...setting };
  }
  if (text.startsWith('$scrypt$')) {
    const match = SCRYPT.exec(text);
    if (match === null) throw invalid(`"${text}" is not an scrypt hash as lila hash-password writes it: $scrypt$ln=15,r=8,p=1$<salt>$<hash>`);
    const [ln, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
    if (ln < 1 || r < 1 || p < 1 || p > 16 || memoryOf(ln, r) > MAX_SCRYPT_MEMORY) {
      throw invalid(`scrypt parameters ln=${ln},r=${r},p=${p} are out of bounds: ln and r from 1, p from 1 to 16, at most 256 MiB (128 * r * 2^ln bytes)`);
    }
    return { kind: 'scrypt', ln, r, p, salt: Buffer.from(match[4], 'base64'), hash: Buffer.from(match[5], 'base64') };
  }
  const other = OTHER_KINDS.find(([start]) => text.startsWith(start));
  if (other !== undefined) throw invalid(`${other[1]} is not supported: ${SUPPORTED}`);
  if (/^[./0-9A-Za-z]{13}$/.test(text)) throw invalid(`a DES crypt hash is not supported: ${SUPPORTED}`);
  throw invalid(`not a password hash lila knows (a password in clear?): ${SUPPORTED}`);
}

/**
 * Checks a password against a hash, off the event loop, in constant time.
 *
 * @param {ReturnType<typeof parseHash>} hash
 * @param {Buffer} password
 * @returns {Promise<boolean>} rejects with `LILA_ERR_RESOURCES` (503) when the check could not run
 */
async function verifyPassword(hash, password) {
  const derived = await derive(hash, password, hash.salt);
  return crypto.timingSafeEqual(derived, hash.hash);
}

/**
 * A hash shaped as `hash` (same kind and cost) that no password matches:
 * what an unknown user's password is checked against, so that it costs as
 * much time as a known one's.
 *
 * @param {ReturnType<typeof parseHash>} hash
 * @returns {ReturnType<typeof parseHash>}
 */
function decoyOf(hash) {
  return { ...hash, salt: crypto.randomBytes(hash.salt.length), hash: crypto.randomBytes(hash.hash.length) };
}

/**
 * lila's own hash of a password (`lila hash-password`): scrypt with a random salt.
 *
 * @param {Buffer | string} password
 * @returns {Promise<string>} `$scrypt$ln=15,r=8,p=1$<salt>$<hash>`
 */
async function hashPassword(password) {
  const { ln, r, p } = SCRYPT_DEFAULTS;
  const salt = crypto.randomBytes(SALT_BYTES);
  const hash = await scrypt(password, salt, HASH_BYTES, scryptOptions(ln, r, p));
  return `$scrypt$ln=${ln},r=${r},p=${p}$${unpadded(salt)}$${unpadded(hash)}`;
}

module.exports = { parseHash, verifyPassword, decoyOf, hashPassword, SUPPORTED };

function derive(hash, password, salt) {
  if (hash.kind === 'bcrypt') return hashWorkers().hash({ kind: 'bcrypt', password, minor: hash.minor, salt, cost: hash.cost });
  const options = scryptOptions(hash.ln, hash.r, hash.p);
  return hashWorkers().hash({ kind: 'scrypt', password, salt, length: hash.hash.length, options });
}

function scryptOptions(ln, r, p) {
  // Node refuses scrypt above maxmem (32 MiB by default): room for what the parameters take.
  return { N: 2 ** ln, r, p, maxmem: 2 * memoryOf(ln, r) + 1024 * 1024 };
}

function memoryOf(ln, r) {
  return 128 * r * 2 ** ln;
}

function unpadded(bytes) {
  return bytes.toString('base64').replace(/=+$/, '');
}

function invalid(message) {
  return new LilaError(codes.INVALID_OPTION, message);
}
