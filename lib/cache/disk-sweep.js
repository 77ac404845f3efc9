'use strict';

// The disk store's bound (--cache-dir-size) with no index shared between processes: a sweep walks
// entries/, counts every file's bytes and evicts the least recently used (by mtime, which the store
// sets to each use) down to 90% of the bound. One process sweeps at a time, whichever creates
// sweep.lock; the others skip and read the count it leaves in usage.json. A sweep also removes what
// writers left behind: temporary files of dead processes, empty folders, markers of gone entries.

const fsp = require('node:fs/promises');
const path = require('node:path');
const { keyFolders, markedEntry, namesIn, statOrNull, eachLimited, MISSING } = require('./disk-layout');
const { rotatePurgeLog } = require('./purge-log');

// Evicting below the bound leaves room for writes: not a sweep after every one.
const LOW_WATER = 0.9;
// A lock older than this was left by a process that died sweeping (a live sweep refreshes it).
const LOCK_STALE_MS = 5 * 60 * 1000;
// A temporary file of a live process older than this is a write that will not end.
const TEMP_STALE_MS = 10 * 60 * 1000;
// A marker is written before its entry is renamed into place: a young marker without its entry
// may be a write under way.
const MARKER_GRACE_MS = 60 * 1000;
// Files stat'ed at once while walking.
const PARALLEL = 16;

/**
 * @typedef {{bytes: number, objects: number, at: number}} Usage what the last sweep counted, and when
 */

/**
 * Sweeps a --cache-dir, unless another process is sweeping it.
 *
 * @param {string} dir
 * @param {object} options
 * @param {number} options.maxBytes the bound
 * @param {number} options.now ms: the time written in usage.json
 * @returns {Promise<(Usage & {evicted: number, temps: number, markers: number}) | null>} null when
 *   another process holds the lock
 * @throws the file system's errors (the lock is released)
 */
async function sweepDirectory(dir, options) {
  return withLock(dir, async (lock) => {
    const temps = await removeLeftTemps(path.join(dir, 'tmp'));
    const files = await usedFiles(dir, lock);
    const { bytes, evicted } = await evict(files, options.maxBytes);
    const kept = new Set();
    for (const file of files) if (!file.evicted) kept.add(file.path);
    const markers = await removeStaleMarkers(dir, kept);
    await rotatePurgeLog(dir);
    const usage = { bytes, objects: kept.size, at: options.now };
    await writeUsage(dir, usage);
    return { ...usage, evicted, temps, markers };
  });
}

/**
 * Runs `fn` while this process holds a --cache-dir's sweep.lock, unless another holds it.
 *
 * @template T
 * @param {string} dir
 * @param {(lock: string) => Promise<T>} fn given the lock's path
 * @returns {Promise<T | null>} null when another process holds the lock
 */
async function withLock(dir, fn) {
  const lock = path.join(dir, 'sweep.lock');
  if (!(await takeLock(lock))) return null;
  try {
    return await fn(lock);
  } finally {
    await fsp.rm(lock, { force: true }).catch(() => {});
  }
}

/**
 * What the last sweep of a --cache-dir counted, by whichever process.
 *
 * @param {string} dir
 * @returns {Promise<Usage | null>} null when no sweep left a count (or it is unreadable)
 */
async function readUsage(dir) {
  try {
    const usage = JSON.parse(await fsp.readFile(path.join(dir, 'usage.json'), 'utf8'));
    return Number.isFinite(usage.bytes) && Number.isFinite(usage.objects) && Number.isFinite(usage.at) ? usage : null;
  } catch {
    return null;
  }
}

module.exports = { sweepDirectory, withLock, readUsage, LOW_WATER };

async function takeLock(lock) {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await (await fsp.open(lock, 'wx')).close();
      return true;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    const stat = await statOrNull(lock);
    // Two processes may both find it stale and both sweep: the same files evicted twice, no harm.
    if (stat !== null && Date.now() - stat.mtimeMs < LOCK_STALE_MS) return false;
    await fsp.rm(lock, { force: true });
  }
  return false;
}

async function removeLeftTemps(tmp) {
  let removed = 0;
  await eachLimited(await namesIn(tmp), PARALLEL, async (name) => {
    const file = path.join(tmp, name);
    const stat = await statOrNull(file);
    if (stat === null) return;
    if (isAlive(Number.parseInt(name, 10)) && Date.now() - stat.mtimeMs < TEMP_STALE_MS) return;
    await fsp.rm(file, { force: true });
    removed++;
  });
  return removed;
}

// Every entry file with its size and last use; empty key folders removed on the way.
async function usedFiles(dir, lock) {
  const files = [];
  let folders = 0;
  for await (const folder of keyFolders(dir)) {
    if (++folders % 256 === 0) await touch(lock);
    if (folder.files.length === 0) {
      // ENOTEMPTY: a writer renamed an entry in meanwhile; the folder stays.
      await fsp.rmdir(folder.dir).catch(() => {});
      continue;
    }
    await eachLimited(folder.files, PARALLEL, async (file) => {
      const stat = await statOrNull(file);
      if (stat !== null) files.push({ path: file, size: stat.size, usedAt: stat.mtimeMs, evicted: false });
    });
  }
  return files;
}

async function evict(files, maxBytes) {
  let bytes = 0;
  for (const file of files) bytes += file.size;
  if (bytes <= maxBytes) return { bytes, evicted: 0 };
  let evicted = 0;
  const goal = Math.floor(maxBytes * LOW_WATER);
  const oldestFirst = files.slice().sort((a, b) => a.usedAt - b.usedAt);
  for (const file of oldestFirst) {
    if (bytes <= goal) break;
    try {
      await fsp.unlink(file.path);
      evicted++;
    } catch (err) {
      if (!MISSING.has(err.code)) throw err;
    }
    file.evicted = true;
    bytes -= file.size;
  }
  return { bytes, evicted };
}

async function removeStaleMarkers(dir, kept) {
  const tags = path.join(dir, 'tags');
  let removed = 0;
  for (const tag of await namesIn(tags)) {
    const folder = path.join(tags, tag);
    const markers = await namesIn(folder);
    await eachLimited(markers, PARALLEL, async (marker) => {
      const entry = markedEntry(dir, marker);
      if (entry !== null && kept.has(entry)) return;
      const stat = await statOrNull(path.join(folder, marker));
      if (stat === null || Date.now() - stat.mtimeMs < MARKER_GRACE_MS) return;
      await fsp.rm(path.join(folder, marker), { force: true });
      removed++;
    });
    await fsp.rmdir(folder).catch(() => {});
  }
  return removed;
}

async function writeUsage(dir, usage) {
  const file = path.join(dir, 'usage.json');
  const temp = `${file}.${process.pid}`;
  await fsp.writeFile(temp, JSON.stringify(usage));
  await fsp.rename(temp, file);
}

async function touch(file) {
  const now = new Date();
  await fsp.utimes(file, now, now).catch(() => {});
}

// Whether a process of this host runs under that pid (EPERM: it does, as another user).
function isAlive(pid) {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}
