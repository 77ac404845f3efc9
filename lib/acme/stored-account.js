'use strict';

const fs = require('node:fs/promises');
const path = require('node:path');
const { createPrivateKey } = require('node:crypto');
const { writeAtomic, makeDirectory, ioError } = require('./state-files');
const { keyPem } = require('./key-pem');
const { removeLeftovers, moveAside } = require('./set-aside');

/**
 * Reads the account file of a CA (StateStore#readAccount), checked: a URL,
 * an optional email, a private key that parses.
 *
 * @param {string} file
 * @param {{warn: Function}} logger told when it is corrupt
 * @returns {Promise<{url: string, email: string | null, key: import('node:crypto').KeyObject} | null>}
 *   null when there is none, or when it was corrupt (then moved aside)
 * @throws {Error} naming the path, for an I/O error
 */
async function readAccountFile(file, logger) {
  let handle;
  try {
    handle = await fs.open(file, 'r');
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw ioError('read', file, err);
  }
  // Read through one descriptor: a write replaces the file, never changes it, so this is one version.
  let stat, text;
  try {
    stat = await handle.stat();
    text = await handle.readFile('utf8');
  } catch (err) {
    throw ioError('read', file, err);
  } finally {
    await handle.close();
  }
  const account = parseAccount(text);
  if (typeof account !== 'string') return account;
  await moveAside(file, stat, `the account in ${file}`, account, logger);
  return null;
}

/**
 * The text of an account file (StateStore#writeAccount), once checked that
 * it would read back.
 *
 * @param {{url: string, email?: string | null, key: import('node:crypto').KeyObject | string}} account
 * @returns {string} JSON
 * @throws {TypeError} for a missing URL, an email that is no string, or a key that does not parse
 */
function accountText({ url, email, key }) {
  if (typeof url !== 'string' || url === '') throw new TypeError(`acme: the account URL must be a string, received ${url}`);
  if (email !== undefined && email !== null && typeof email !== 'string') {
    throw new TypeError(`acme: the account email must be a string, received ${email}`);
  }
  const pem = keyPem(key);
  try {
    createPrivateKey(pem);
  } catch (err) {
    throw new TypeError(`acme: the account key does not parse: ${err.message}`);
  }
  return `${JSON.stringify({ url, email: email ?? null, key: pem }, null, 2)}\n`;
}

/**
 * Writes an account file (mode 0600), replacing it atomically.
 *
 * @param {string} file
 * @param {string} text from accountText()
 * @returns {Promise<void>}
 */
async function writeAccountFile(file, text) {
  await makeDirectory(path.dirname(file));
  await writeAtomic(file, text);
  await removeLeftovers(path.dirname(file), path.basename(file));
}

/**
 * Checks what was read of a stored account (accountText()'s JSON): a URL, an optional
 * email, a private key that parses.
 *
 * @param {string} text
 * @returns {{url: string, email: string | null, key: import('node:crypto').KeyObject} | string}
 *   the account, or what is wrong with it
 */
function parseAccount(text) {
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (data === null || typeof data !== 'object') return 'not a JSON object';
  if (typeof data.url !== 'string' || data.url === '') return 'no account URL';
  if (data.email !== undefined && data.email !== null && typeof data.email !== 'string') return 'an email that is not a string';
  if (typeof data.key !== 'string') return 'no key';
  try {
    return { url: data.url, email: data.email ?? null, key: createPrivateKey(data.key) };
  } catch (err) {
    return `its key does not parse: ${err.message}`;
  }
}

module.exports = { readAccountFile, accountText, writeAccountFile, parseAccount };
