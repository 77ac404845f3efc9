'use strict';

const fs = require('node:fs');
const path = require('node:path');

// Editors write a file in several steps; one change is told after they settle.
const SETTLE_MS = 100;

/**
 * Calls `onChange` when any of `files` changes, including when an editor
 * or a deploy replaces one by renaming a new file over it: the directories
 * are watched, not the files. A directory given as a file is watched whole.
 *
 * @param {string[]} files
 * @param {() => void} onChange called once changes have settled
 * @param {import('../ops/logger')} logger where a watch that cannot start says so
 * @returns {{close: () => void}}
 */
function watchFiles(files, onChange, logger) {
  const watchers = [];
  let timer = null;
  const changed = () => {
    clearTimeout(timer);
    timer = setTimeout(onChange, SETTLE_MS);
  };
  const byDirectory = new Map();
  // Each directory with the names to follow in it; null: everything in it.
  for (const file of files) {
    const full = path.resolve(file);
    if (isDirectory(full)) {
      byDirectory.set(full, null);
      continue;
    }
    const directory = path.dirname(full);
    const names = byDirectory.get(directory);
    if (names === undefined) byDirectory.set(directory, new Set([path.basename(full)]));
    else if (names !== null) names.add(path.basename(full));
  }
  for (const [directory, names] of byDirectory) {
    try {
      const watcher = fs.watch(directory, (event, name) => {
        if (names === null || name === null || names.has(name)) changed();
      });
      watcher.on('error', (err) => logger.warn(`cannot watch ${directory}: ${err.message}`));
      watchers.push(watcher);
    } catch (err) {
      // Out of inotify watches, say: SIGHUP still reloads.
      logger.warn(`cannot watch ${directory}: ${err.message}; reload with SIGHUP`);
    }
  }
  return {
    close() {
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
    }
  };
}

module.exports = { watchFiles };

function isDirectory(file) {
  try {
    return fs.statSync(file).isDirectory();
  } catch {
    return false;
  }
}
