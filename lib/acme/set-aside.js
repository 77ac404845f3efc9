'use strict';

const fs = require('node:fs/promises');
const path = require('node:path');
const { statOrNull, ioError } = require('./state-files');

// What a write leaves beside its target while it works. The `_` in the suffix is in no name,
// so `a.old-1_ff` is a leftover of `a`, never a certificate of its own.
const LEFTOVER = /\.(new|old|tmp)-\d+_[0-9a-f]+$/;
// A writer is done in milliseconds: leftovers this old are a dead writer's, which a later write removes.
const LEFTOVER_MS = 10 * 60 * 1000;

/**
 * What kind of leftover of `base` a directory entry is: a write's new
 * version (`new`), the version it replaces (`old`) or a temporary file (`tmp`).
 *
 * @param {string} entry a name in the folder that holds `base`
 * @param {string} base the file or folder written
 * @returns {'new' | 'old' | 'tmp' | null} null when it is no leftover of `base`
 */
function leftoverOf(entry, base) {
  const leftover = LEFTOVER.exec(entry);
  if (leftover === null || entry.slice(0, leftover.index) !== base) return null;
  return leftover[1];
}

/**
 * Removes a dead writer's leftovers of `base` in `parent`; best effort.
 *
 * @param {string} parent
 * @param {string} base
 * @returns {Promise<void>}
 */
async function removeLeftovers(parent, base) {
  const entries = await fs.readdir(parent).catch(() => []);
  for (const entry of entries) {
    if (leftoverOf(entry, base) === null) continue;
    const file = path.join(parent, entry);
    const stat = await statOrNull(file).catch(() => null);
    if (stat !== null && Date.now() - stat.mtimeMs > LEFTOVER_MS) await fs.rm(file, { recursive: true, force: true }).catch(() => {});
  }
}

/**
 * Moves a corrupt file or folder aside (`<target>.corrupt-<time>`), and
 * says so once: the instance that moves it says it.
 *
 * @param {string} target
 * @param {import('node:fs').Stats} seen its stat when read: nothing else is moved
 * @param {string} what names it in the message
 * @param {string} reason what is wrong with it
 * @param {{warn: Function}} logger
 * @returns {Promise<void>}
 * @throws {Error} naming the path, when it cannot be moved
 */
async function moveAside(target, seen, what, reason, logger) {
  const aside = `${target}.corrupt-${new Date().toISOString().replaceAll(':', '_')}`;
  try {
    // A write may have replaced it since it was read: move only what was read.
    const now = await statOrNull(target);
    if (now === null || now.ino !== seen.ino || now.dev !== seen.dev) return;
    await fs.rename(target, aside);
  } catch (err) {
    // Another instance moved it first.
    if (err.code === 'ENOENT') return;
    throw ioError('move aside', target, err);
  }
  logger.warn(`acme: ${what} is corrupt (${reason}): moved it aside to ${aside}`);
}

module.exports = { leftoverOf, removeLeftovers, moveAside };
