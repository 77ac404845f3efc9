'use strict';

const fs = require('node:fs/promises');
const os = require('node:os');
const path = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');
const { DIRECTORY_MODE, writeAtomic, makeDirectory, statOrNull, ioError, tag } = require('./state-files');
const { createLock, breakStale, holding } = require('./name-locks');
const { defaultStateDir, caDirectoryName, certificateFolderName, lockFileName } = require('./state-paths');
const { readAccountFile, accountText, writeAccountFile } = require('./stored-account');
const { readCertificateFolder, writeCertificateFolder } = require('./stored-certificate');

const ACCOUNT_FILE = 'account.json';
const SILENT = { info() {}, warn() {}, error() {} };

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
    return path.join(this.dir, 'acme', caDirectoryName(directoryUrl), 'certificates', certificateFolderName(name));
  }

  /**
   * The account registered with a CA.
   *
   * @param {string} directoryUrl the CA's directory URL
   * @returns {Promise<{url: string, email: string | null, key: import('node:crypto').KeyObject} | null>} null when
   *   there is none, or when it was corrupt (then moved aside)
   */
  async readAccount(directoryUrl) {
    return readAccountFile(this.accountFile(directoryUrl), this.logger);
  }

  /**
   * Saves the account registered with a CA (mode 0600), replacing the file atomically.
   *
   * @param {string} directoryUrl the CA's directory URL
   * @param {{url: string, email?: string | null, key: import('node:crypto').KeyObject | string}} account its URL
   *   at the CA, contact and private key (a KeyObject or PEM)
   * @returns {Promise<void>}
   */
  async writeAccount(directoryUrl, { url, email, key }) {
    const text = accountText({ url, email, key });
    await writeAccountFile(this.accountFile(directoryUrl), text);
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
    return readCertificateFolder(this.certificateDirectory(directoryUrl, name), name, this.logger);
  }

  /**
   * Saves a certificate, its key (mode 0600) and meta, all three replaced at
   * once: a reader sees the old ones or the new ones, never a mix.
   *
   * @param {string} directoryUrl the CA's directory URL
   * @param {string} name a lower-case DNS name the certificate covers
   * @param {{cert: string, key: string | import('node:crypto').KeyObject, meta?: object}} certificate the PEM chain
   *   (leaf first), its private key, and what the caller wants kept with them
   * @returns {Promise<void>}
   * @throws {TypeError} when the name is invalid, or the chain, key or meta would not read back
   */
  async writeCertificate(directoryUrl, name, { cert, key, meta = {} }) {
    await writeCertificateFolder(this.certificateDirectory(directoryUrl, name), name, { cert, key, meta });
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
    return path.join(this.dir, 'acme', 'locks', lockFileName(name));
  }
}

module.exports = { defaultStateDir, caDirectoryName, StateStore };
