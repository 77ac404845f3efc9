'use strict';

const fs = require('node:fs/promises');
const path = require('node:path');
const { X509Certificate, createPrivateKey } = require('node:crypto');
const { DIRECTORY_MODE, writeDurable, syncDirectory, makeDirectory, statOrNull, ioError, tag } = require('./state-files');
const { keyPem } = require('./key-pem');
const { sanNames } = require('./chain-check');
const { leftoverOf, removeLeftovers, moveAside } = require('./set-aside');

const CERTIFICATE_FILE = 'certificate.pem';
const KEY_FILE = 'private-key.pem';
const META_FILE = 'meta.json';
const CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const BEGIN_CERTIFICATE = /-----BEGIN CERTIFICATE-----/g;
// A read that keeps meeting replaces in progress gives up after this many tries.
const READ_TRIES = 50;
// A certificate's folder with a file missing, or not a folder, is corrupt, not unreadable.
const MISSING = new Set(['ENOENT', 'EISDIR', 'ENOTDIR']);
const CHANGED = Symbol('changed');

/**
 * Reads a certificate's folder (StateStore#readCertificate), checked: the
 * chain parses, the key matches its leaf, the leaf covers the name, the meta
 * is a JSON object. A folder replaced while read is read again.
 *
 * @param {string} folder
 * @param {string} name the lower-case DNS name it is for
 * @param {{warn: Function}} logger told when it is corrupt
 * @returns {Promise<{cert: string, key: string, meta: object} | null>} null when there is
 *   none, or when it was corrupt (then moved aside)
 * @throws {Error} naming the path, for an I/O error, or when it keeps changing
 */
async function readCertificateFolder(folder, name, logger) {
  let suspect = null;
  for (let tries = 0; tries < READ_TRIES; tries++) {
    const current = await readFolder(folder);
    if (current === CHANGED) continue;
    if (current === null) {
      // A replace moves the old folder aside before it moves the new one in: the old one is
      // still whole, whether that replace is running or died there.
      const previous = await readPrevious(folder, name);
      if (previous === CHANGED) continue;
      return previous;
    }
    const certificate = checkCertificate(current.files, name);
    if (typeof certificate !== 'string') return certificate;
    // Read twice before moving aside: a network filesystem's caches may have mixed two versions.
    if (suspect !== certificate) {
      suspect = certificate;
      continue;
    }
    await moveAside(folder, current.stat, `the certificate for ${name} in ${folder}`, certificate, logger);
    return null;
  }
  throw new Error(`acme: ${folder} kept changing while it was read (${READ_TRIES} tries)`);
}

/**
 * Writes a certificate's folder (StateStore#writeCertificate): a new folder
 * with the chain, the key (mode 0600) and the meta, swapped in for the old
 * one at once, so that a reader sees one version whole.
 *
 * @param {string} folder
 * @param {string} name a lower-case DNS name the certificate covers
 * @param {{cert: string, key: string | import('node:crypto').KeyObject, meta?: object}} certificate
 * @returns {Promise<void>}
 * @throws {TypeError} when the chain, key or meta would not read back
 */
async function writeCertificateFolder(folder, name, { cert, key, meta = {} }) {
  const files = certificateFiles(name, { cert, key, meta });
  const parent = path.dirname(folder);
  await makeDirectory(parent);
  const fresh = `${folder}.new-${tag()}`;
  try {
    await fs.mkdir(fresh, { mode: DIRECTORY_MODE });
    await writeDurable(path.join(fresh, CERTIFICATE_FILE), files.cert);
    await writeDurable(path.join(fresh, KEY_FILE), files.key);
    await writeDurable(path.join(fresh, META_FILE), files.meta);
    await syncDirectory(fresh);
    await swapIn(fresh, folder);
  } catch (err) {
    await fs.rm(fresh, { recursive: true, force: true }).catch(() => {});
    throw ioError('write', err.path || folder, err);
  }
  await removeLeftovers(parent, path.basename(folder));
}

/**
 * What a certificate is stored as (the folder's three files, a store's one value), once
 * checked that it would read back.
 *
 * @param {string} name a lower-case DNS name the certificate covers
 * @param {{cert: string, key: string | import('node:crypto').KeyObject, meta?: object}} certificate
 * @returns {{cert: string, key: string, meta: string}} the PEM chain, the PEM key and the meta's JSON text
 * @throws {TypeError} when the chain, key or meta would not read back
 */
function certificateFiles(name, { cert, key, meta = {} }) {
  if (meta === null || typeof meta !== 'object') throw new TypeError(`acme: the meta of ${name} must be an object`);
  if (typeof cert !== 'string') throw new TypeError(`acme: the certificate of ${name} must be a PEM string`);
  const files = { cert, key: keyPem(key), meta: `${JSON.stringify(meta, null, 2)}\n` };
  const problem = checkCertificate(files, name);
  if (typeof problem === 'string') throw new TypeError(`acme: the certificate for ${name} cannot be stored: ${problem}`);
  return files;
}

/**
 * Checks what was read of a stored certificate: the chain parses, the key matches its
 * leaf, the leaf covers the name, the meta is a JSON object.
 *
 * @param {{cert: string | null, key: string | null, meta: string | null}} files what was read (null: missing),
 *   the meta as JSON text
 * @param {string} name the lower-case DNS name it is for
 * @returns {{cert: string, key: string, meta: object} | string} the certificate, its meta parsed; or what is wrong
 */
function checkCertificate({ cert, key, meta }, name) {
  if (cert === null) return `${CERTIFICATE_FILE} is missing`;
  const blocks = cert.match(CERTIFICATE) || [];
  if (blocks.length === 0 || blocks.length !== cert.match(BEGIN_CERTIFICATE).length) {
    return `${CERTIFICATE_FILE} is not a whole PEM chain`;
  }
  let leaf;
  try {
    leaf = new X509Certificate(blocks[0]);
    for (const block of blocks.slice(1)) new X509Certificate(block); // eslint-disable-line no-new
  } catch (err) {
    return `${CERTIFICATE_FILE} does not parse: ${err.message}`;
  }
  // A wildcard's certificate names it literally (checkHost would take it for a host to match).
  const covered = name.startsWith('*.') ? sanNames(leaf).includes(name) : leaf.checkHost(name) !== undefined;
  if (!covered) return `the certificate does not cover ${name}`;
  if (key === null) return `${KEY_FILE} is missing`;
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    return `${KEY_FILE} does not parse: ${err.message}`;
  }
  if (!leaf.checkPrivateKey(privateKey)) return `${KEY_FILE} does not match the certificate`;
  if (meta === null) return `${META_FILE} is missing`;
  let parsed;
  try {
    parsed = JSON.parse(meta);
  } catch {
    return `${META_FILE} is not JSON`;
  }
  if (parsed === null || typeof parsed !== 'object') return `${META_FILE} is not a JSON object`;
  return { cert, key, meta: parsed };
}

module.exports = { readCertificateFolder, writeCertificateFolder, certificateFiles, checkCertificate };

// The folder's three files (null for one missing) and its stat; null when there is no folder;
// CHANGED when it was replaced while read.
async function readFolder(folder) {
  const before = await statOrNull(folder);
  if (before === null) return null;
  const files = {};
  for (const [field, file] of [['cert', CERTIFICATE_FILE], ['key', KEY_FILE], ['meta', META_FILE]]) {
    try {
      files[field] = await fs.readFile(path.join(folder, file), 'utf8');
    } catch (err) {
      // NFS: the folder was replaced since its path was looked up.
      if (err.code === 'ESTALE') return CHANGED;
      if (!MISSING.has(err.code)) throw ioError('read', path.join(folder, file), err);
      files[field] = null;
    }
  }
  // Renaming a folder changes its ctime: the same inode and ctime after mean the files are one folder's.
  const after = await statOrNull(folder);
  if (after === null || after.ino !== before.ino || after.ctimeMs !== before.ctimeMs) return CHANGED;
  return { stat: before, files };
}

// The newest whole `<name>.old-*` beside a missing folder; CHANGED when one went while read.
async function readPrevious(folder, name) {
  const parent = path.dirname(folder);
  const base = path.basename(folder);
  let entries;
  try {
    entries = await fs.readdir(parent);
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw ioError('read', parent, err);
  }
  const olds = [];
  for (const entry of entries) {
    if (leftoverOf(entry, base) !== 'old') continue;
    const stat = await statOrNull(path.join(parent, entry));
    if (stat !== null) olds.push({ folder: path.join(parent, entry), mtimeMs: stat.mtimeMs });
  }
  olds.sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const old of olds) {
    const previous = await readFolder(old.folder);
    if (previous === null || previous === CHANGED) return CHANGED;
    const certificate = checkCertificate(previous.files, name);
    if (typeof certificate !== 'string') return certificate;
  }
  return null;
}

// rename() onto a folder that is not empty fails: the one in place goes aside first, and is
// removed once the new one is in. Another writer may put its own in between: that goes aside too.
async function swapIn(fresh, folder) {
  const olds = [];
  for (let tries = 0; ; tries++) {
    const old = `${folder}.old-${tag()}`;
    try {
      await fs.rename(folder, old);
      olds.push(old);
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
    try {
      await fs.rename(fresh, folder);
      break;
    } catch (err) {
      if ((err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') || tries >= 10) throw err;
    }
  }
  await syncDirectory(path.dirname(folder));
  for (const old of olds) await fs.rm(old, { recursive: true, force: true }).catch(() => {});
}
