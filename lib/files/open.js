'use strict';

const fs = require('node:fs');
const fsp = require('node:fs/promises');

const { O_RDONLY, O_NOFOLLOW = 0, O_NONBLOCK = 0 } = fs.constants;
// Not following a final link (where the platform can), and not waiting on a FIFO swapped in
// since the check: open(2) of a FIFO for reading blocks until a writer comes.
const FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
const GONE = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'EACCES', 'EPERM', 'ENXIO']);

/**
 * Opens the file `resolveFile` found, if it is still that very file: the
 * same device and inode, a regular file. What was checked is then what is
 * read, whatever was renamed or linked since (the check's TOCTOU window
 * closed); a file changed in place is read as it is now, and its stat here
 * is the one to answer with (size, validators).
 *
 * @param {{file: string, stat: import('node:fs').Stats}} found `resolveFile`'s `{kind: 'file'}` answer
 *   (or a precompressed sibling's)
 * @returns {Promise<{handle: import('node:fs/promises').FileHandle, stat: import('node:fs').Stats} | null>}
 *   null: gone or replaced since (a 404); the caller closes the handle
 */
async function openFile(found) {
  let handle;
  try {
    handle = await fsp.open(found.file, FLAGS);
  } catch (err) {
    if (GONE.has(err.code)) return null;
    throw err;
  }
  try {
    const stat = await handle.stat();
    if (stat.isFile() && stat.ino === found.stat.ino && stat.dev === found.stat.dev) return { handle, stat };
  } catch (err) {
    await handle.close();
    throw err;
  }
  await handle.close();
  return null;
}

/**
 * `openFile` with its calls made on the calling thread (as nginx opens
 * files: no threadpool round trips, a slow disk stalls the event loop).
 *
 * @param {{file: string, stat: import('node:fs').Stats}} found
 * @returns {{fd: number, stat: import('node:fs').Stats} | null} null: gone or replaced since; the caller closes `fd`
 */
function openFileSync(found) {
  let fd;
  try {
    fd = fs.openSync(found.file, FLAGS);
  } catch (err) {
    if (GONE.has(err.code)) return null;
    throw err;
  }
  let stat;
  try {
    stat = fs.fstatSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
  if (stat.isFile() && stat.ino === found.stat.ino && stat.dev === found.stat.dev) return { fd, stat };
  fs.closeSync(fd);
  return null;
}

module.exports = { openFile, openFileSync };
