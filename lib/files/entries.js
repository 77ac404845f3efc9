'use strict';

const fsp = require('node:fs/promises');
const nodePath = require('node:path');
const { requestSegments } = require('./path-segments');
const { inspect } = require('./resolve');

// Entries looked at together: a large directory does not fill libuv's threadpool, which file reads share.
const BATCH = 32;
const SKIPPED = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'EACCES', 'EPERM']);

/**
 * What a listing (`--browse`) shows of a directory: the entries a request
 * could fetch by name, each a regular file or a directory, a link followed
 * only when it stays under the root. Left out: dotfiles and
 * dot-directories, names `resolveFile` would refuse (a backslash, a
 * control character; on Windows a `:`), names that are no UTF-8 (read as
 * U+FFFD), sockets, FIFOs, devices, entries gone while being read.
 *
 * @param {string} dir the directory's real path (`resolveFile`'s `dir`)
 * @param {string} realRoot `fs.realpath` of the root
 * @param {{windows?: boolean}} [options]
 * @returns {Promise<{name: string, directory: boolean, size: number, mtimeMs: number}[]>} in readdir's order
 */
async function directoryEntries(dir, realRoot, options = {}) {
  const dirents = (await fsp.readdir(dir, { withFileTypes: true })).filter(({ name }) => listable(name, options));
  const entries = [];
  for (let i = 0; i < dirents.length; i += BATCH) {
    const batch = await Promise.all(dirents.slice(i, i + BATCH).map((dirent) => entryOf(dir, dirent, realRoot)));
    for (const entry of batch) if (entry !== null) entries.push(entry);
  }
  return entries;
}

module.exports = { directoryEntries };

function listable(name, options) {
  if (name.charCodeAt(0) === 0x2e || name.includes('\ufffd')) return false;
  return requestSegments(`/${encodeURIComponent(name)}`, options).segments !== undefined;
}

async function entryOf(dir, dirent, realRoot) {
  const file = nodePath.join(dir, dirent.name);
  let stat;
  if (dirent.isSymbolicLink()) {
    const found = await inspect(file, realRoot);
    if (found.kind !== 'file' && found.kind !== 'directory') return null;
    stat = found.stat;
  } else if (dirent.isFile() || dirent.isDirectory()) {
    try {
      stat = await fsp.lstat(file);
    } catch (err) {
      if (SKIPPED.has(err.code)) return null;
      throw err;
    }
    if (!stat.isFile() && !stat.isDirectory()) return null;
  } else {
    return null;
  }
  return { name: dirent.name, directory: stat.isDirectory(), size: stat.size, mtimeMs: stat.mtimeMs };
}
