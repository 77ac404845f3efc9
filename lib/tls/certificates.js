'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { X509Certificate, createPrivateKey } = require('node:crypto');
const { LilaError, codes } = require('../errors');

const CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const PRIVATE_KEY = /-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]+?-----END \1PRIVATE KEY-----/;
// In a directory: NAME.pem or NAME.crt, with NAME.key beside it unless the PEM holds the key.
const CERTIFICATE_FILE = /\.(pem|crt)$/;
const READ_ERRORS = { ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'a directory, not a file' };

/**
 * @typedef {object} Certificate A certificate chain and its key, as read from files.
 * @property {string} file where the chain was read
 * @property {string} keyFile where the key was read (the same file for a combined PEM)
 * @property {string} cert the PEM chain, leaf first
 * @property {string} key the PEM private key
 * @property {string[]} names the DNS names it is for, lower case (`*.example.com` included)
 * @property {string} keyType `rsa`, `ec`, `ed25519`, ...
 * @property {string} serialNumber the leaf's serial number, hex
 * @property {Date} validTo when the leaf expires
 */

/**
 * Reads and checks certificates: each source is a `--tls-cert` (a PEM file
 * with the chain, and the key too when `key` is not given, or a directory)
 * with its `--tls-key`. A directory gives every `NAME.pem` and `NAME.crt`
 * in it, by name, each with `NAME.key` beside it or its key in the PEM.
 *
 * @param {{cert: string, key?: string}[]} sources in the order given
 * @returns {Certificate[]} in the order given
 * @throws {LilaError} `LILA_ERR_TLS_CERTIFICATE` naming the file and what is wrong with it
 */
function readCertificates(sources) {
  const certificates = [];
  for (const source of sources) {
    if (source.key === undefined && isDirectory(source.cert)) certificates.push(...readDirectory(source.cert));
    else certificates.push(readPair(source.cert, source.key));
  }
  return certificates;
}

/**
 * Whether a certificate's names cover a server name: exactly, or through a
 * `*.` wildcard for one label (`*.example.com` covers `a.example.com`, not
 * `example.com` nor `a.b.example.com`).
 *
 * @param {string} pattern a name of the certificate, lower case
 * @param {string} name the client's server name, lower case
 * @returns {boolean}
 */
function nameMatches(pattern, name) {
  if (pattern === name) return true;
  if (!pattern.startsWith('*.')) return false;
  const dot = name.indexOf('.');
  return dot > 0 && name.slice(dot) === pattern.slice(1);
}

module.exports = { readCertificates, nameMatches, readError };

function readDirectory(directory) {
  let entries;
  try {
    entries = fs.readdirSync(directory).filter((name) => CERTIFICATE_FILE.test(name)).sort();
  } catch (err) {
    throw problem(directory, readError(err));
  }
  if (entries.length === 0) throw problem(directory, 'holds no NAME.pem or NAME.crt certificate');
  return entries.map((name) => {
    const file = path.join(directory, name);
    const keyFile = path.join(directory, name.replace(CERTIFICATE_FILE, '.key'));
    return readPair(file, fs.existsSync(keyFile) ? keyFile : undefined);
  });
}

function readPair(file, keyFile) {
  const text = readText(file);
  const chain = text.match(CERTIFICATE);
  if (chain === null) throw problem(file, 'is not a PEM certificate (no BEGIN CERTIFICATE block)');
  let leaf;
  try {
    leaf = new X509Certificate(chain[0]);
  } catch (err) {
    throw problem(file, `holds an invalid certificate: ${err.message}`);
  }
  const keyText = keyFile === undefined ? text : readText(keyFile);
  const keyPem = PRIVATE_KEY.exec(keyText);
  if (keyPem === null) {
    throw keyFile === undefined
      ? problem(file, 'has no private key: give its key with --tls-key, or a PEM that holds both')
      : problem(keyFile, 'is not a PEM private key (no BEGIN PRIVATE KEY block)');
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(keyPem[0]);
  } catch (err) {
    throw problem(keyFile || file, `holds an invalid or encrypted private key: ${err.message}`);
  }
  if (!leaf.checkPrivateKey(privateKey)) {
    throw problem(keyFile || file, `holds a key that does not match the certificate in ${file}`);
  }
  return {
    file,
    keyFile: keyFile || file,
    cert: chain.join('\n'),
    key: keyPem[0],
    names: namesOf(leaf),
    keyType: privateKey.asymmetricKeyType,
    serialNumber: leaf.serialNumber,
    validTo: new Date(leaf.validTo)
  };
}

// subjectAltName DNS entries; the subject's CN only when there are none.
function namesOf(leaf) {
  const alt = leaf.subjectAltName;
  if (alt) {
    const names = alt.split(/,\s*/).filter((entry) => entry.startsWith('DNS:')).map((entry) => entry.slice(4).toLowerCase());
    if (names.length > 0) return names;
  }
  const cn = /(?:^|\n)CN=([^\n]+)/.exec(leaf.subject);
  return cn === null ? [] : [cn[1].toLowerCase()];
}

function readText(file) {
  try {
    return fs.readFileSync(file, 'latin1');
  } catch (err) {
    throw problem(file, readError(err));
  }
}

function isDirectory(file) {
  try {
    return fs.statSync(file).isDirectory();
  } catch {
    return false;
  }
}

function readError(err) {
  return `cannot be read: ${READ_ERRORS[err.code] || err.message}`;
}

function problem(file, what) {
  return new LilaError(codes.TLS_CERTIFICATE, `certificate file "${file}" ${what}`);
}
