'use strict';

const fs = require('node:fs/promises');
const os = require('node:os');
const path = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');
const { X509Certificate, KeyObject, createPrivateKey, createHash } = require('node:crypto');
const { DIRECTORY_MODE, writeDurable, writeAtomic, syncDirectory, makeDirectory, statOrNull, ioError, tag } = require('./state-files');
const { createLock, breakStale, holding } = require('./name-locks');

const ACCOUNT_FILE = 'account.json';
const CERTIFICATE_FILE = 'certificate.pem';
const KEY_FILE = 'private-key.pem';
const META_FILE = 'meta.json';
// A certificate's name becomes a folder: lower-case DNS names only, so nothing can climb out.
const DNS_NAME = /^[a-z0-9-]+(\.[a-z0-9-]+)*$/;
// A CA's folder is `host[_port]-path`: the host keeps [a-z0-9.-] and never holds `_`, the path
// follows the last `-` (it holds none) with `/` as `_`, everything else %XX: one URL, one folder.
const HOST_ESCAPED = /[^a-z0-9.-]/gu;
const PATH_ESCAPED = /[^A-Za-z0-9./]/gu;
const LOCK_ESCAPED = /[^a-z0-9.-]/gu;
// Longer names are cut and given a hash, so that they and the suffixes below fit in 255 bytes.
const MAX_NAME = 200;
const CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const BEGIN_CERTIFICATE = /-----BEGIN CERTIFICATE-----/g;
// What a write leaves beside its target while it works. The `_` in the suffix is in no name,
// so `a.old-1_ff` is a leftover of `a`, never a certificate of its own.
const LEFTOVER = /\.(new|old|tmp)-\d+_[0-9a-f]+$/;
// A writer is done in milliseconds: leftovers this old are a dead writer's, which a later write removes.
const LEFTOVER_MS = 10 * 60 * 1000;
// A read that keeps meeting replaces in progress gives up after this many tries.
const READ_TRIES = 50;
// A certificate's folder with a file missing, or not a folder, is corrupt, not unreadable.
const MISSING = new Set(['ENOENT', 'EISDIR', 'ENOTDIR']);
const SILENT = { info() {}, warn() {}, error() {} };
const CHANGED = Symbol('changed');

/**
 * Where lila keeps its ACME state when `--state-dir` is not given, as the
 * XDG base directory spec says: `$XDG_DATA_HOME/lila`, or
 * `~/.local/share/lila` when XDG_DATA_HOME is unset, empty or relative.
 *
 * @param {object} [env] the environment
 * @param {string} [home] the user's home directory
 * @returns {string}
 */
function defaultStateDir(env = process.env, home = os.homedir()) {
  const data = env.XDG_DATA_HOME;
  // The spec calls a relative path invalid, to be ignored.
  if (typeof data === 'string' && path.isAbsolute(data)) return path.join(data, 'lila');
  return path.join(home, '.local', 'share', 'lila');
}

/**
 * The folder name of a CA in the state directory, made of its directory URL's
 * host, port (unless 443) and path: `acme-v02.api.letsencrypt.org-directory`,
 * `127.0.0.1_14000-dir`. Two URLs differing in any of them get two names.
 *
 * @param {string} directoryUrl an http: or https: URL
 * @returns {string}
 * @throws {TypeError} when it is not such a URL
 */
function caDirectoryName(directoryUrl) {
  let url;
  try {
    url = new URL(directoryUrl);
  } catch {
    throw new TypeError(`acme: the directory URL must be a URL, received "${directoryUrl}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TypeError(`acme: the directory URL must be https: or http:, received "${directoryUrl}"`);
  }
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const host = escape(url.hostname, HOST_ESCAPED) + (port === 443 ? '' : `_${port}`);
  const where = escape((url.pathname + url.search).slice(1), PATH_ESCAPED).replaceAll('/', '_');
  return fit(`${host}-${where}`, url.href);
}

/**
 * An ACME state directory, which several lila instances may share (an NFS
 * mount, a Kubernetes volume): per CA an account and certificates, written
 * atomically, checked when read, and locks saying which instance orders
 * which name. A corrupt file is moved aside and reads as none, so that a new
 * one is ordered; real I/O errors (EACCES...) throw, naming the path.
 *
 * `<dir>/acme/<ca>/account.json`, `<dir>/acme/<ca>/certificates/<name>/`
 * (`certificate.pem`, `private-key.pem`, `meta.json`), `<dir>/acme/locks/<name>.lock`.
 */
class StateStore {
  /**
   * @param {string} dir the state directory, made (0700) when first written
   * @param {{logger?: {info: Function, warn: Function, error: Function}}} [options]
   *   `logger` is told of corrupt files moved aside
   */
  constructor(dir, { logger = SILENT } = {}) {
    if (typeof dir !== 'string' || dir === '') {
      throw new TypeError(`acme: the state directory must be a path, received ${String(dir)}`);
    }
    this.dir = path.resolve(dir);
    this.logger = logger;
  }

  /**
   * Keeps an HTTP-01 token's answer where every lila sharing the directory
   * finds it: the CA may ask any of them (behind one address), not only the
   * one that ordered (Caddy's distributed solving does the same).
   *
   * @param {string} directoryUrl
   * @param {string} token base64url
   * @param {string} keyAuthorization
   */
  async writeToken(directoryUrl, token, keyAuthorization) {
    const file = this.tokenFile(directoryUrl, token);
    await fs.mkdir(path.dirname(file), { recursive: true, mode: DIRECTORY_MODE });
    await writeAtomic(file, keyAuthorization);
  }

  /**
   * @param {string} directoryUrl
   * @param {string} token
   * @returns {Promise<string | null>} the answer another lila stored, or null
   */
  async readToken(directoryUrl, token) {
    try {
      return await fs.readFile(this.tokenFile(directoryUrl, token), 'utf8');
    } catch {
      return null;
    }
  }

  /**
   * @param {string} directoryUrl
   * @param {string} token
   */
  async removeToken(directoryUrl, token) {
    await fs.rm(this.tokenFile(directoryUrl, token), { force: true }).catch(() => {});
  }

  tokenFile(directoryUrl, token) {
    if (!/^[A-Za-z0-9_-]{1,200}$/.test(token)) throw new TypeError(`acme: "${token}" is no challenge token`);
    return path.join(this.dir, 'acme', caDirectoryName(directoryUrl), 'challenges', token);
  }

  /**
   * @param {string} directoryUrl the CA's directory URL
   * @returns {string} the path of the CA's account file
   */
  accountFile(directoryUrl) {
    return path.join(this.dir, 'acme', caDirectoryName(directoryUrl), ACCOUNT_FILE);
  }

  /**
   * @param {string} directoryUrl the CA's directory URL
   * @param {string} name a lower-case DNS name
   * @returns {string} the path of the certificate's folder
   * @throws {TypeError} when the name is not a lower-case DNS name
   */
  certificateDirectory(directoryUrl, name) {
    return path.join(this.dir, 'acme', caDirectoryName(directoryUrl), 'certificates', folderOf(name));
  }

  /**
   * The account registered with a CA.
   *
   * @param {string} directoryUrl the CA's directory URL
   * @returns {Promise<{url: string, email: string | null, key: KeyObject} | null>} null when
   *   there is none, or when it was corrupt (then moved aside)
   */
  async readAccount(directoryUrl) {
    const file = this.accountFile(directoryUrl);
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
    await moveAside(file, stat, `the account in ${file}`, account, this.logger);
    return null;
  }

  /**
   * Saves the account registered with a CA (mode 0600), replacing the file atomically.
   *
   * @param {string} directoryUrl the CA's directory URL
   * @param {{url: string, email?: string | null, key: KeyObject | string}} account its URL
   *   at the CA, contact and private key (a KeyObject or PEM)
   * @returns {Promise<void>}
   */
  async writeAccount(directoryUrl, { url, email, key }) {
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
    const file = this.accountFile(directoryUrl);
    await makeDirectory(path.dirname(file));
    await writeAtomic(file, `${JSON.stringify({ url, email: email ?? null, key: pem }, null, 2)}\n`);
    await removeLeftovers(path.dirname(file), ACCOUNT_FILE);
  }

  /**
   * A certificate obtained from a CA, checked: the chain parses, the key
   * matches its leaf, the leaf covers the name, the meta is a JSON object.
   *
   * @param {string} directoryUrl the CA's directory URL
   * @param {string} name a lower-case DNS name
   * @returns {Promise<{cert: string, key: string, meta: object} | null>} the PEM chain and key;
   *   null when there is none, or when it was corrupt (then moved aside)
   * @throws {TypeError} when the name is not a lower-case DNS name
   */
  async readCertificate(directoryUrl, name) {
    const folder = this.certificateDirectory(directoryUrl, name);
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
      await moveAside(folder, current.stat, `the certificate for ${name} in ${folder}`, certificate, this.logger);
      return null;
    }
    throw new Error(`acme: ${folder} kept changing while it was read (${READ_TRIES} tries)`);
  }

  /**
   * Saves a certificate, its key (mode 0600) and meta, all three replaced at
   * once: a reader sees the old ones or the new ones, never a mix.
   *
   * @param {string} directoryUrl the CA's directory URL
   * @param {string} name a lower-case DNS name the certificate covers
   * @param {{cert: string, key: string | KeyObject, meta?: object}} certificate the PEM chain
   *   (leaf first), its private key, and what the caller wants kept with them
   * @returns {Promise<void>}
   * @throws {TypeError} when the name is invalid, or the chain, key or meta would not read back
   */
  async writeCertificate(directoryUrl, name, { cert, key, meta = {} }) {
    const folder = this.certificateDirectory(directoryUrl, name);
    if (meta === null || typeof meta !== 'object') throw new TypeError(`acme: the meta of ${name} must be an object`);
    if (typeof cert !== 'string') throw new TypeError(`acme: the certificate of ${name} must be a PEM string`);
    const files = { cert, key: keyPem(key), meta: `${JSON.stringify(meta, null, 2)}\n` };
    const problem = checkCertificate(files, name);
    if (typeof problem === 'string') throw new TypeError(`acme: the certificate for ${name} cannot be stored: ${problem}`);
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
   * Takes the lock on a name, without waiting: a file created exclusively,
   * its mtime refreshed every `staleMs / 3` while held. A lock not refreshed
   * for `staleMs` is a dead holder's, and is taken over.
   *
   * @param {string} name what is locked, usually a certificate's name
   * @param {{staleMs?: number}} [options] default 60000
   * @returns {Promise<(() => Promise<void>) | null>} `release()`, or null when a live holder has it
   */
  async lock(name, { staleMs = 60000 } = {}) {
    if (!(staleMs > 0 && Number.isFinite(staleMs))) throw new TypeError(`acme: staleMs must be a positive number, received ${staleMs}`);
    const file = this.lockFile(name);
    await makeDirectory(path.dirname(file));
    const content = `${JSON.stringify({ pid: process.pid, host: os.hostname(), created: new Date().toISOString(), nonce: tag() })}\n`;
    try {
      for (let tries = 0; tries < 3; tries++) {
        if (await createLock(file, content)) return holding(file, content, staleMs, this.logger);
        const stat = await statOrNull(file);
        if (stat === null) continue;
        if (Date.now() - stat.mtimeMs <= staleMs || !(await breakStale(file, staleMs))) return null;
      }
    } catch (err) {
      throw ioError('lock', err.path || file, err);
    }
    return null;
  }

  /**
   * Takes the lock on a name, trying again every `pollMs` while another
   * instance holds it. Re-read what the lock guards once it is yours: the
   * other instance may have written it meanwhile.
   *
   * @param {string} name
   * @param {{staleMs?: number, pollMs?: number, signal?: AbortSignal}} [options]
   * @returns {Promise<() => Promise<void>>} `release()`
   * @throws the signal's reason when it aborts first
   */
  async waitForLock(name, { staleMs, pollMs = 1000, signal } = {}) {
    for (;;) {
      if (signal !== undefined) signal.throwIfAborted();
      const release = await this.lock(name, staleMs === undefined ? {} : { staleMs });
      if (release !== null) return release;
      try {
        await sleep(pollMs, undefined, signal === undefined ? {} : { signal });
      } catch (err) {
        if (signal !== undefined && signal.aborted) throw signal.reason;
        throw err;
      }
    }
  }

  /**
   * @param {string} name
   * @returns {string} the path of the name's lock file
   */
  lockFile(name) {
    if (typeof name !== 'string' || name === '') throw new TypeError(`acme: a lock name must be a string, received ${name}`);
    return path.join(this.dir, 'acme', 'locks', `${fit(escape(name, LOCK_ESCAPED), name)}.lock`);
  }
}

module.exports = { defaultStateDir, caDirectoryName, StateStore };

function folderOf(name) {
  if (typeof name !== 'string' || name.length > 253 || !DNS_NAME.test(name)) {
    throw new TypeError(`acme: a certificate name must be a lower-case DNS name, received "${name}"`);
  }
  return fit(name, name);
}

function escape(text, escaped) {
  return text.replace(escaped, (char) => [...Buffer.from(char)].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''));
}

// `~` is in no escaped name: a cut name never equals another name.
function fit(name, original) {
  if (name.length <= MAX_NAME) return name;
  return `${name.slice(0, 160)}~${createHash('sha256').update(original).digest('hex').slice(0, 32)}`;
}


function keyPem(key) {
  if (key instanceof KeyObject) {
    if (key.type !== 'private') throw new TypeError(`acme: the key must be a private key, received a ${key.type} key`);
    return key.export({ type: 'pkcs8', format: 'pem' });
  }
  if (typeof key !== 'string') throw new TypeError('acme: the key must be a KeyObject or a PEM string');
  return key;
}

// The account, or what is wrong with it.
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

// `{cert, key, meta}` with meta parsed, or what is wrong with them.
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
  if (leaf.checkHost(name) === undefined) return `the certificate does not cover ${name}`;
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
    const leftover = LEFTOVER.exec(entry);
    if (leftover === null || leftover[1] !== 'old' || entry.slice(0, leftover.index) !== base) continue;
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

// Removes a dead writer's leftovers of `base` in `parent`; best effort.
async function removeLeftovers(parent, base) {
  const entries = await fs.readdir(parent).catch(() => []);
  for (const entry of entries) {
    const leftover = LEFTOVER.exec(entry);
    if (leftover === null || entry.slice(0, leftover.index) !== base) continue;
    const file = path.join(parent, entry);
    const stat = await statOrNull(file).catch(() => null);
    if (stat !== null && Date.now() - stat.mtimeMs > LEFTOVER_MS) await fs.rm(file, { recursive: true, force: true }).catch(() => {});
  }
}












// Moves a corrupt file or folder aside, and says so once: the one that moves it says it.
async function moveAside(target, seen, what, reason, logger) {
  const aside = `${target}.corrupt-${new Date().toISOString().replaceAll(':', '_')}`;
  try {
    // A write may have replaced it since it was read: move only what was read.
    const now = await statOrNull(target);
    if (now === null || now.ino !== seen.ino || now.dev !== seen.dev) return;
    await fs.rename(target, aside);
  } catch (err) {
    // Another instance moved it first.
    if (err.code === 'ENOENT') return;
    throw ioError('move aside', target, err);
  }
  logger.warn(`acme: ${what} is corrupt (${reason}): moved it aside to ${aside}`);
}
