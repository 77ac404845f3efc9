'use strict';

// Where the disk store keeps what under --cache-dir:
//   entries/<2 hex>/<key hash>/<variant hash>   one file an entry (disk-entry-file.js)
//   tags/<tag hash>/<key hash>.<variant hash>   an empty marker per tag of an entry: a purge by tag reads only these
//   tmp/<pid>-<random>                          entries being written, renamed into entries/ once whole
//   purges.log, purges.log.1                    deletes and purges, for the other processes' memory (purge-log.js)
//   sweep.lock, usage.json                      the sweep's lock and its last count (disk-sweep.js)
// A key's variants share its folder, so that a lookup is one readdir; the 256 buckets keep
// folders small. Names are hashes: a key may be longer than a file name, and hold any byte.

const crypto = require('node:crypto');
const fsp = require('node:fs/promises');
const path = require('node:path');

const KEY_NAME = /^[0-9a-f]{32}$/;
const VARIANT_NAME = /^[0-9a-f]{16}$/;
const BUCKET_NAME = /^[0-9a-f]{2}$/;
const MARKER_NAME = /^([0-9a-f]{32})\.([0-9a-f]{16})$/;
// Errors that say a file or folder is not there (any more): a miss, not a failure.
const MISSING = new Set(['ENOENT', 'ENOTDIR']);

/**
 * @param {string} dir --cache-dir
 * @param {string} key
 * @returns {string} the folder of the key's variants
 */
function keyDir(dir, key) {
  const hash = hashOf(key, 32);
  return path.join(dir, 'entries', hash.slice(0, 2), hash);
}

/**
 * @param {string} varyValues
 * @returns {string} the name of a variant's file in its key's folder
 */
function variantName(varyValues) {
  return hashOf(varyValues, 16);
}

/**
 * @param {string} dir --cache-dir
 * @param {string} key
 * @param {string} varyValues
 * @returns {string} the file of that entry
 */
function entryPath(dir, key, varyValues) {
  return path.join(keyDir(dir, key), variantName(varyValues));
}

/**
 * @param {string} dir --cache-dir
 * @param {string} tag
 * @returns {string} the folder of the tag's markers
 */
function tagDir(dir, tag) {
  return path.join(dir, 'tags', hashOf(tag, 32));
}

/**
 * @param {string} key
 * @param {string} varyValues
 * @returns {string} the name of an entry's marker in a tag's folder
 */
function markerName(key, varyValues) {
  return `${hashOf(key, 32)}.${variantName(varyValues)}`;
}

/**
 * @param {string} dir --cache-dir
 * @param {string} marker a marker's name
 * @returns {string | null} the file of the entry it marks, null for a name that is no marker
 */
function markedEntry(dir, marker) {
  const match = MARKER_NAME.exec(marker);
  return match === null ? null : path.join(dir, 'entries', match[1].slice(0, 2), match[1], match[2]);
}

/**
 * A name of its own for an entry being written; the pid in it lets a sweep tell a dead
 * process's leftover from a write in progress.
 *
 * @param {string} dir --cache-dir
 * @returns {string}
 */
function tempPath(dir) {
  return path.join(dir, 'tmp', `${process.pid}-${crypto.randomBytes(6).toString('hex')}`);
}

/**
 * Every key folder under entries/, bucket by bucket, with its variants' files (none: an empty
 * folder, for the sweep to remove). Folders and files that go meanwhile are skipped.
 *
 * @param {string} dir --cache-dir
 * @returns {AsyncGenerator<{dir: string, files: string[]}>}
 */
async function* keyFolders(dir) {
  const entries = path.join(dir, 'entries');
  for (const bucket of await namesIn(entries, BUCKET_NAME)) {
    const bucketDir = path.join(entries, bucket);
    for (const key of await namesIn(bucketDir, KEY_NAME)) {
      const folder = path.join(bucketDir, key);
      const files = (await namesIn(folder, VARIANT_NAME)).map((name) => path.join(folder, name));
      yield { dir: folder, files };
    }
  }
}

/**
 * The names in a folder that match a pattern; none when the folder is not there.
 *
 * @param {string} folder
 * @param {RegExp} [pattern]
 * @returns {Promise<string[]>}
 */
async function namesIn(folder, pattern) {
  let names;
  try {
    names = await fsp.readdir(folder);
  } catch (err) {
    if (MISSING.has(err.code)) return [];
    throw err;
  }
  return pattern === undefined ? names : names.filter((name) => pattern.test(name));
}

/**
 * @param {string} file
 * @returns {Promise<import('node:fs').Stats | null>} null when the file is not there
 */
async function statOrNull(file) {
  try {
    return await fsp.stat(file);
  } catch (err) {
    if (MISSING.has(err.code)) return null;
    throw err;
  }
}

/**
 * Runs `fn` on every item, at most `limit` at once: a walk of many files keeps the thread pool
 * busy without queueing thousands of operations on it.
 *
 * @template T
 * @param {T[]} items
 * @param {number} limit
 * @param {(item: T) => Promise<void>} fn
 */
async function eachLimited(items, limit, fn) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

module.exports = {
  MISSING,
  VARIANT_NAME,
  keyDir,
  variantName,
  entryPath,
  tagDir,
  markerName,
  markedEntry,
  tempPath,
  keyFolders,
  namesIn,
  statOrNull,
  eachLimited
};

function hashOf(text, length) {
  return crypto.createHash('sha256').update(text).digest('hex').slice(0, length);
}
