'use strict';

// The lock files of the state directory (state-store.js's lock()): a file created
// exclusively, its mtime refreshed while held, broken once stale by one contender only.

const fs = require('node:fs/promises');
const { FILE_MODE, ioError, describe, tag } = require('./state-files');

// Created exclusively; its mtime set by this host's clock, which is what other hosts compare with.
async function createLock(file, content) {
  let handle;
  try {
    handle = await fs.open(file, 'wx', FILE_MODE);
  } catch (err) {
    if (err.code === 'EEXIST') return false;
    throw err;
  }
  try {
    await handle.writeFile(content);
    const now = new Date();
    await handle.utimes(now, now);
  } catch (err) {
    await handle.close();
    await fs.rm(file, { force: true });
    throw err;
  }
  await handle.close();
  return true;
}

// Several instances may find the same stale lock at once. Each renames it to a name of its own:
// one moves the stale file and may create the lock anew. One that moved a live lock instead
// (created meanwhile by the first) puts it back and gives up.
async function breakStale(file, staleMs) {
  const aside = `${file}.stale-${tag()}`;
  try {
    await fs.rename(file, aside);
  } catch (err) {
    if (err.code === 'ENOENT') return false;
    throw err;
  }
  const stat = await fs.stat(aside);
  if (Date.now() - stat.mtimeMs > staleMs) {
    await fs.rm(aside, { force: true });
    return true;
  }
  try {
    await fs.link(aside, file);
  } catch (err) {
    // EEXIST: a third instance holds it now. Otherwise a filesystem without hard links.
    if (err.code !== 'EEXIST') await fs.rename(aside, file);
  }
  await fs.rm(aside, { force: true });
  return false;
}

async function releaseLock(file, content) {
  let text;
  try {
    text = await fs.readFile(file, 'utf8');
    // Not ours any more when it went stale and another instance took it over.
    if (text === content) await fs.unlink(file);
  } catch (err) {
    if (err.code !== 'ENOENT') throw ioError('release', file, err);
  }
}

// release(), refreshing the lock until called.
function holding(file, content, staleMs, logger) {
  let warned = false;
  const refresh = setInterval(() => {
    const now = new Date();
    fs.utimes(file, now, now).catch((err) => {
      // ENOENT: another instance is putting it back (see breakStale).
      if (err.code === 'ENOENT' || warned) return;
      warned = true;
      logger.warn(`acme: cannot refresh the lock ${file}: ${describe(err)}; another instance may take it over`);
    });
  }, Math.max(1, Math.floor(staleMs / 3)));
  refresh.unref();
  let released = null;
  return () => {
    if (released === null) {
      clearInterval(refresh);
      released = releaseLock(file, content);
    }
    return released;
  };
}

module.exports = { createLock, breakStale, holding };
