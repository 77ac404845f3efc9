'use strict';

// Removing entries from a --cache-dir: a key's folder (a delete, a url on a host), the entries a
// tag's markers point to that still carry it, or every entry whose head a purge names (a prefix,
// a url on every host: keys are hashed, so only their heads say what they are).

const fsp = require('node:fs/promises');
const path = require('node:path');
const { keyDir, tagDir, markedEntry, keyFolders, namesIn, eachLimited } = require('./disk-layout');

// Heads read at once.
const PARALLEL = 16;

/**
 * @typedef {object} EntryFiles what these functions use of the disk store
 * @property {string} dir
 * @property {(file: string, headOnly: boolean) => Promise<(import('./entry').Entry & {fileSize?: number}) | null>} read
 *   null for a file not there, or corrupt, or unreadable
 * @property {(file: string, size?: number) => Promise<boolean>} remove whether this call removed it
 */

/**
 * @param {EntryFiles} files
 * @param {string} key
 * @returns {Promise<number>} how many entries went
 */
async function removeKey(files, key) {
  const folder = keyDir(files.dir, key);
  const removed = await Promise.all((await namesIn(folder)).map((name) => files.remove(path.join(folder, name))));
  // ENOTEMPTY: a variant was written meanwhile.
  await fsp.rmdir(folder).catch(() => {});
  return removed.filter(Boolean).length;
}

/**
 * @param {EntryFiles} files
 * @param {string} tag
 * @returns {Promise<number>} how many entries went
 */
async function removeTagged(files, tag) {
  let count = 0;
  await eachLimited(await namesIn(tagDir(files.dir, tag)), PARALLEL, async (marker) => {
    const file = markedEntry(files.dir, marker);
    const head = file === null ? null : await files.read(file, true);
    // The marker stays: a write of that entry may be under way (the sweep removes old ones).
    if (head !== null && head.tags.includes(tag) && (await files.remove(file, head.fileSize))) count++;
  });
  return count;
}

/**
 * @param {EntryFiles} files
 * @param {import('./purge-match').PurgeMatcher} matcher
 * @returns {Promise<number>} how many entries went
 */
async function removeMatching(files, matcher) {
  let count = 0;
  for await (const folder of keyFolders(files.dir)) {
    await eachLimited(folder.files, PARALLEL, async (file) => {
      const head = await files.read(file, true);
      if (head !== null && matcher.matches(head.key, head.tags) && (await files.remove(file, head.fileSize))) count++;
    });
  }
  return count;
}

module.exports = { removeKey, removeTagged, removeMatching };
