'use strict';

// One entry as one file: a first line `lila-cache 1 <head bytes> <body bytes>\n`, the head as JSON
// (every field of the entry but body and size), then the body. Written under tmp/ and renamed into
// place once whole, so that no reader sees half of one; a file whose lengths do not add up (a power
// loss before the data reached the disk), with another first line or a head that is no entry's, is
// corrupt: its reader treats it as a miss and removes it.

const fsp = require('node:fs/promises');
const path = require('node:path');
const { isEntryHead, entrySize } = require('./entry');
const { MISSING } = require('./disk-layout');

const MAGIC = 'lila-cache 1 ';
// The first line is short: a file without a newline this early is no entry.
const FIRST_LINE_MAX = 64;
// One read brings the first line, the head and, for a small entry, its body.
const FIRST_READ = 16 * 1024;
const FILE_MODE = 0o600;

/**
 * Writes an entry to `temp` whole, its times set to `usedAt` (the disk store's LRU reads the
 * file's mtime as its last use), then renames it to `file`, making `file`'s folder if it is not
 * there (or went while this one wrote: a sweep removes empty folders). On any error `temp` is
 * removed and the error thrown.
 *
 * @param {import('./entry').Entry} entry
 * @param {string} temp a name of tmp/
 * @param {string} file its place under entries/
 * @param {number} usedAt ms
 * @returns {Promise<number>} the file's length
 */
async function writeEntryFile(entry, temp, file, usedAt) {
  const prefix = encodeHead(entry);
  try {
    const handle = await fsp.open(temp, 'wx', FILE_MODE);
    try {
      await handle.writeFile(prefix);
      await handle.writeFile(entry.body);
      const time = new Date(usedAt);
      await handle.utimes(time, time);
    } finally {
      await handle.close();
    }
    await renameInto(temp, file);
  } catch (err) {
    await fsp.rm(temp, { force: true }).catch(() => {});
    throw err;
  }
  return prefix.length + entry.body.length;
}

/**
 * Reads an entry file: its head and body, or only its head.
 *
 * @param {string} file
 * @param {object} [options]
 * @param {boolean} [options.headOnly] leave the body unread (`body` is then null, and `size` not set)
 * @param {number} [options.usedAt] ms: set as the file's use time when the one it has is
 *   older than `touchBefore`
 * @param {number} [options.touchBefore] ms
 * @returns {Promise<(import('./entry').Entry & {fileSize?: number}) | null>} null when the file is not there;
 *   `fileSize` with `headOnly`
 * @throws {Error} `corrupt: true` for a file that is no whole entry; the file system's errors
 */
async function readEntryFile(file, options = {}) {
  let handle;
  try {
    handle = await fsp.open(file, 'r');
  } catch (err) {
    if (MISSING.has(err.code)) return null;
    throw err;
  }
  try {
    const stat = await handle.stat();
    const first = await readAt(handle, Buffer.allocUnsafe(Math.min(stat.size, FIRST_READ)), 0);
    const { lineEnd, headLength, bodyLength } = firstLine(first, stat.size);
    const headEnd = lineEnd + headLength;
    const headBytes = headEnd <= first.length ? first.subarray(lineEnd, headEnd) : await readAt(handle, Buffer.allocUnsafe(headLength), lineEnd);
    let head;
    try {
      head = JSON.parse(headBytes.toString('utf8'));
    } catch {
      throw corrupt(`its head is no JSON`);
    }
    if (!isEntryHead(head)) throw corrupt('its head is no entry\'s');
    if (options.usedAt !== undefined && stat.mtimeMs < options.touchBefore) {
      const time = new Date(options.usedAt);
      await handle.utimes(time, time).catch(() => {});
    }
    if (options.headOnly === true) return Object.assign(head, { body: null, fileSize: stat.size });
    const body = Buffer.allocUnsafeSlow(bodyLength);
    const inFirst = Math.max(0, Math.min(first.length - headEnd, bodyLength));
    first.copy(body, 0, headEnd, headEnd + inFirst);
    if (inFirst < bodyLength) await readAt(handle, body.subarray(inFirst), headEnd + inFirst);
    head.body = body;
    head.size = entrySize(head);
    return head;
  } finally {
    await handle.close();
  }
}

/**
 * Renames a written file into its place, making its folder when it is not there.
 *
 * @param {string} temp
 * @param {string} file
 */
async function renameInto(temp, file) {
  // A sweep may remove the folder between mkdir and rename: a second try makes it again.
  for (let attempt = 0; ; attempt++) {
    await fsp.mkdir(path.dirname(file), { recursive: true });
    try {
      await fsp.rename(temp, file);
      return;
    } catch (err) {
      if (err.code !== 'ENOENT' || attempt === 1) throw err;
    }
  }
}

module.exports = { MAGIC, writeEntryFile, readEntryFile, renameInto };

function encodeHead(entry) {
  const head = {};
  for (const name of Object.keys(entry)) {
    if (name !== 'body' && name !== 'size' && name !== 'fileSize') head[name] = entry[name];
  }
  const json = Buffer.from(JSON.stringify(head), 'utf8');
  const line = Buffer.from(`${MAGIC}${json.length} ${entry.body.length}\n`, 'latin1');
  return Buffer.concat([line, json], line.length + json.length);
}

function firstLine(first, fileSize) {
  const lineEnd = first.subarray(0, FIRST_LINE_MAX).indexOf(0x0a) + 1;
  if (lineEnd === 0) throw corrupt('it has no first line');
  const line = first.toString('latin1', 0, lineEnd - 1);
  const match = /^lila-cache 1 (\d{1,10}) (\d{1,15})$/.exec(line);
  if (match === null) throw corrupt(`its first line is not "${MAGIC}<head> <body>"`);
  const headLength = Number(match[1]);
  const bodyLength = Number(match[2]);
  if (lineEnd + headLength + bodyLength !== fileSize) throw corrupt(`it is ${fileSize} bytes long, not ${lineEnd + headLength + bodyLength}`);
  return { lineEnd, headLength, bodyLength };
}

// Fills `buffer` from `position`; a file shorter than that is corrupt (it was checked whole).
async function readAt(handle, buffer, position) {
  let filled = 0;
  while (filled < buffer.length) {
    const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, position + filled);
    if (bytesRead === 0) throw corrupt('it ended early');
    filled += bytesRead;
  }
  return buffer;
}

function corrupt(reason) {
  return Object.assign(new Error(`corrupt cache entry: ${reason}`), { corrupt: true });
}
