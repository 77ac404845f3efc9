'use strict';

// The file operations the ACME state directory is written with: durable writes (fsync,
// then rename over, then the folder synced), folders made 0700, and errors that name the
// path and say what went wrong.

const fs = require('node:fs/promises');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const FILE_MODE = 0o600;
const DIRECTORY_MODE = 0o700;
// Some systems cannot fsync a directory (Windows, some network filesystems): best effort there.
const NO_DIRECTORY_SYNC = new Set(['EISDIR', 'EPERM', 'EINVAL', 'EBADF', 'ENOTSUP']);
const DESCRIBED = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOSPC: 'no space left on the device',
  EROFS: 'read-only filesystem',
  EDQUOT: 'disk quota exceeded',
  ENAMETOOLONG: 'name too long'
};

async function writeDurable(file, data) {
  const handle = await fs.open(file, 'wx', FILE_MODE);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function writeAtomic(file, data) {
  const temporary = `${file}.tmp-${tag()}`;
  try {
    await writeDurable(temporary, data);
    await fs.rename(temporary, file);
    await syncDirectory(path.dirname(file));
  } catch (err) {
    await fs.rm(temporary, { force: true }).catch(() => {});
    throw ioError('write', file, err);
  }
}

// A rename is durable once its directory is synced.
async function syncDirectory(directory) {
  let handle;
  try {
    handle = await fs.open(directory, 'r');
    await handle.sync();
  } catch (err) {
    if (!NO_DIRECTORY_SYNC.has(err.code)) throw err;
  } finally {
    if (handle !== undefined) await handle.close();
  }
}

async function makeDirectory(directory) {
  try {
    await fs.mkdir(directory, { recursive: true, mode: DIRECTORY_MODE });
  } catch (err) {
    throw ioError('create', directory, err);
  }
}

async function statOrNull(file) {
  try {
    return await fs.stat(file);
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ESTALE') return null;
    throw ioError('read', file, err);
  }
}

function ioError(action, file, err) {
  if (err.message.startsWith('acme: ')) return err;
  return Object.assign(new Error(`acme: cannot ${action} ${file}: ${describe(err)}`, { cause: err }), { code: err.code, path: file });
}

function describe(err) {
  return Object.hasOwn(DESCRIBED, err.code) ? `${DESCRIBED[err.code]} (${err.code})` : err.code || err.message;
}

function tag() {
  return `${process.pid}_${randomBytes(4).toString('hex')}`;
}

module.exports = { FILE_MODE, DIRECTORY_MODE, writeDurable, writeAtomic, syncDirectory, makeDirectory, statOrNull, ioError, describe, tag };
