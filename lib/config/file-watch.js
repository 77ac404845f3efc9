'use strict';

const fs = require('node:fs');
const path = require('node:path');

// Editors write a file in several steps; one change is told after they settle.
const SETTLE_MS = 100;

/**
 * Calls `onChange` when any of `files` changes: its content, or what it
 * resolves to. An editor or a deploy that renames a new file over one is
 * seen, and so is Kubernetes' way of updating a mounted Secret or ConfigMap:
 * `tls.crt` is a link to `..data/tls.crt`, and an update swaps the `..data`
 * link to a new directory (`mv -T ..data_tmp ..data`), an event that names
 * neither the file nor anything it names. So every event in a watched
 * directory (the file's own, and the one it resolves into) makes each file be
 * looked at again (where it resolves to, its inode, size and mtime), and only
 * a file that differs calls `onChange`. A directory given as a file is
 * watched whole: any change in it counts.
 *
 * @param {string[]} files
 * @param {() => void} onChange called once changes have settled
 * @param {import('../ops/logger')} logger where a watch that cannot start says so
 * @returns {{close: () => void}}
 */
function watchFiles(files, onChange, logger) {
  /** @type {Map<string, fs.FSWatcher | null>} watched directories, null where the watch failed */
  const watchers = new Map();
  const stamps = new Map();
  const wholeDirectories = new Set();
  let timer = null;
  let closed = false;
  // An event came from a directory watched whole since the last check.
  let wholeChanged = false;
  const check = () => {
    timer = null;
    let changed = wholeChanged;
    wholeChanged = false;
    for (const file of stamps.keys()) {
      const stamp = stampOf(file);
      if (stamp !== stamps.get(file)) {
        stamps.set(file, stamp);
        changed = true;
      }
    }
    follow();
    if (changed) onChange();
  };
  const event = (directory) => {
    if (closed) return;
    if (wholeDirectories.has(directory)) wholeChanged = true;
    clearTimeout(timer);
    timer = setTimeout(check, SETTLE_MS);
  };
  const watch = (directory) => {
    if (watchers.has(directory)) return;
    try {
      const watcher = fs.watch(directory, () => event(directory));
      watcher.on('error', (err) => logger.warn(`cannot watch ${directory}: ${err.message}`));
      watchers.set(directory, watcher);
    } catch (err) {
      // Out of inotify watches, say: SIGHUP still reloads.
      logger.warn(`cannot watch ${directory}: ${err.message}; reload with SIGHUP`);
      watchers.set(directory, null);
    }
  };
  // The directories to watch: each file's own, and the one it resolves into now (a swap
  // moves that one: the old is let go).
  const follow = () => {
    const wanted = new Set(wholeDirectories);
    for (const file of stamps.keys()) {
      wanted.add(path.dirname(file));
      const real = realPath(file);
      if (real !== null) wanted.add(path.dirname(real));
    }
    for (const directory of wanted) watch(directory);
    for (const [directory, watcher] of watchers) {
      if (wanted.has(directory)) continue;
      if (watcher !== null) watcher.close();
      watchers.delete(directory);
    }
  };
  for (const file of files) {
    const full = path.resolve(file);
    if (isDirectory(full)) wholeDirectories.add(full);
    else stamps.set(full, stampOf(full));
  }
  follow();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      for (const watcher of watchers.values()) if (watcher !== null) watcher.close();
      watchers.clear();
    }
  };
}

module.exports = { watchFiles };

// What a file is now: where it resolves to, and that file's inode, size and mtime.
function stampOf(file) {
  try {
    const real = fs.realpathSync(file);
    const stat = fs.statSync(real);
    return `${real} ${stat.ino} ${stat.size} ${stat.mtimeMs}`;
  } catch {
    return 'missing';
  }
}

function realPath(file) {
  try {
    return fs.realpathSync(file);
  } catch {
    return null;
  }
}

function isDirectory(file) {
  try {
    return fs.statSync(file).isDirectory();
  } catch {
    return false;
  }
}
