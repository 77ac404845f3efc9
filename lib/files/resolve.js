'use strict';

const fs = require('node:fs');
const fsp = require('node:fs/promises');
const nodePath = require('node:path');
const { requestSegments } = require('./path-segments');

const DEFAULT_INDEX = ['index.html'];
// What the file system answers for a path that names nothing lila may serve: a 404.
const MISSING = new Set(['ENOENT', 'ENOTDIR', 'ENAMETOOLONG', 'ELOOP', 'EINVAL']);
const DENIED = new Set(['EACCES', 'EPERM']);
// The file system calls the checks make, through libuv's threadpool or on the calling thread.
const ASYNC = { realpath: fsp.realpath, lstat: fsp.lstat };
const SYNC = { realpath: fs.realpathSync.native, lstat: fs.lstatSync };
// What `walking` answers at a link below its base: the path is to be resolved whole.
const LINK = Symbol('LINK');

/**
 * What a request path names under a root (issue 47: "nothing outside DIR,
 * ever"): the path's segments decoded and checked (`path-segments.js`:
 * 400 and 404 refusals), joined with `path.join` and checked to stay under
 * the root, then the file system's real path of the result checked to stay
 * under the root's real path (a symbolic link inside the root is followed;
 * one that leads out is a 404), and only regular files and directories
 * served (sockets, FIFOs, devices: 404). A directory asked with its slash is
 * answered by its first index file present.
 *
 * What remains between this check and the caller's open: a path component
 * swapped for a link by someone who can write under the root. `openFile`
 * (`open.js`) closes that for files: it opens without following a final
 * link and only the very file (device and inode) checked here.
 *
 * @param {string} root absolute and normalized (`path.resolve`); it may be a link itself (a deploy's `current`)
 * @param {string} path the request path as received (percent-encoded, latin1), without its query, after --strip-prefix
 * @param {{index?: string[], realRoot?: string, lazyRealRoot?: boolean, windows?: boolean}} [options]
 *   `index`: the names tried in a directory (default `['index.html']`); `realRoot`: `fs.realpath(root)`
 *   when the caller holds it (else it is asked for on each call, so that a root link switched by a
 *   deploy is followed at once); `lazyRealRoot`: ask for it only when a link below the root is met
 *   (or an index name is no plain name): a path with no link below the root names a file in the
 *   directory the root names at that moment, whatever links lead to the root, and is answered with
 *   that path (the root's real path would cost a readlink per directory of the root on every call);
 *   `windows`: refuse the names Windows reads as others (default: on Windows)
 * @returns {Promise<
 *   {kind: 'file', file: string, path: string, stat: import('node:fs').Stats, realRoot: string | null, index?: true} |
 *   {kind: 'directory', dir: string, path: string, stat: import('node:fs').Stats, realRoot: string | null, slash: boolean} |
 *   {kind: 'missing'} |
 *   {kind: 'refused', status: 400 | 403 | 404, why: string}>}
 *   `file`/`dir`: the real path, to open (with lazyRealRoot and `realRoot` null: the path under `root`
 *   as asked, no link below the root in it); `path`: the path under `root` as asked (its name gives the
 *   Content-Type, precompressed siblings lie beside it); `realRoot`: the root's real path checked against
 *   (for `precompressedSiblings` and `directoryEntries`; null when lazyRealRoot did without it, see
 *   `realRootSync`). Rejects only on an unexpected I/O error (EIO, EMFILE).
 */
async function resolveFile(root, path, options = {}) {
  return runAsync(resolving(root, path, options));
}

/**
 * `resolveFile` with its file system calls made on the calling thread: no
 * threadpool round trips (about 13 µs against 130 µs for a small file's
 * path on a warm cache), but a slow disk or a network file system stalls
 * the event loop meanwhile.
 *
 * @param {string} root
 * @param {string} path
 * @param {{index?: string[], realRoot?: string, lazyRealRoot?: boolean, windows?: boolean}} [options]
 * @returns {ReturnType<typeof resolveFile> extends Promise<infer R> ? R : never} as resolveFile's, not a promise
 */
function resolveFileSync(root, path, options = {}) {
  return runSync(resolving(root, path, options));
}

/**
 * A root's real path, on the calling thread: what `resolveFile` checks
 * against, for a caller whose answer came without it (lazyRealRoot).
 *
 * @param {string} root
 * @returns {string | null} null: the root names nothing (now)
 */
function realRootSync(root) {
  return runSync(realRootOf(root));
}

/**
 * What an absolute path under a root is, checked as `resolveFile` checks
 * it: its real path under `realRoot`, a regular file or a directory.
 *
 * @param {string} file
 * @param {string} realRoot
 * @returns {Promise<{kind: 'file' | 'directory', real: string, stat: import('node:fs').Stats} |
 *   {kind: 'missing'} | {kind: 'refused', status: 403 | 404, why: string}>}
 */
async function inspect(file, realRoot) {
  return runAsync(inspecting(file, realRoot));
}

/**
 * `inspect` on the calling thread (see `resolveFileSync`).
 *
 * @param {string} file
 * @param {string} realRoot
 * @returns {{kind: 'file' | 'directory', real: string, stat: import('node:fs').Stats} |
 *   {kind: 'missing'} | {kind: 'refused', status: 403 | 404, why: string}}
 */
function inspectSync(file, realRoot) {
  return runSync(inspecting(file, realRoot));
}

/**
 * Whether `file` is `base` or lies under it (both absolute and normalized).
 *
 * @param {string} file
 * @param {string} base
 * @returns {boolean}
 */
function within(file, base) {
  if (file === base) return true;
  const prefix = base.endsWith(nodePath.sep) ? base : base + nodePath.sep;
  return file.startsWith(prefix);
}

module.exports = { resolveFile, resolveFileSync, realRootSync, inspect, inspectSync, within, DEFAULT_INDEX };

/*
 * The checks are written once, as generators that yield each file system call they make
 * (`[name, path]`); a driver makes the calls, through the threadpool or on this thread, and
 * sends back each answer or error.
 */
function* resolving(root, path, options) {
  const asked = requestSegments(path, options);
  if (asked.status !== undefined) return { kind: 'refused', status: asked.status, why: asked.why };
  const joined = nodePath.join(root, ...asked.segments);
  // An invariant (segments hold no separator and no dot segment), checked all the same.
  if (!within(joined, root)) return { kind: 'refused', status: 404, why: 'a path out of the root' };
  const given = options.realRoot !== undefined;
  let realRoot = given ? options.realRoot : null;
  // lazyRealRoot: the names are walked from the root as named, whose own links the kernel follows at each call.
  let found = !given && options.lazyRealRoot === true && asked.segments.length > 0 ? yield* walking(root, asked.segments) : LINK;
  if (found === LINK) {
    if (!given) {
      realRoot = yield* realRootOf(root);
      // A root removed while serving (a deploy between two releases) names nothing.
      if (realRoot === null) return { kind: 'missing' };
    }
    // A real root the caller holds is checked against, not walked from: what it says is not known here.
    if (!given) found = yield* walking(realRoot, asked.segments);
    if (found === LINK) found = yield* inspecting(joined, realRoot);
  }
  if (found.kind === 'file') {
    // /file.txt/ names no directory (ENOTDIR to a shell), as nginx answers it.
    return asked.slash ? { kind: 'missing' } : { kind: 'file', file: found.real, path: joined, stat: found.stat, realRoot };
  }
  if (found.kind !== 'directory') return found;
  if (asked.slash) {
    for (const name of options.index === undefined ? DEFAULT_INDEX : options.index) {
      const indexPath = nodePath.join(joined, name);
      if (!within(indexPath, joined)) continue;
      let index = plainName(name) ? yield* walking(found.real, [name]) : LINK;
      if (index === LINK) {
        realRoot ??= yield* realRootOf(root);
        if (realRoot === null) return { kind: 'missing' };
        index = yield* inspecting(indexPath, realRoot);
      }
      if (index.kind === 'file') return { kind: 'file', file: index.real, path: indexPath, stat: index.stat, realRoot, index: true };
    }
  }
  return { kind: 'directory', dir: found.real, path: joined, stat: found.stat, realRoot, slash: asked.slash };
}

/*
 * What `names` name under `base`, checked as `inspecting` checks the same path: one lstat per
 * name, in order, while none is a link. `base` is the root's real path (no link in it), or with
 * lazyRealRoot the root as named. Then the path to open is `base` and the names joined, and
 * realpath's readlink of every component of the path, the root's again among them, is saved: for
 * a file at the top of a root three directories deep, one system call in place of five
 * (realpath's 4, then lstat). At the first link, LINK: the caller resolves the path whole with
 * `inspecting`, as it always did. Each name is one component: no separator, not `.` or `..`.
 */
function* walking(base, names) {
  let real = base;
  let stat;
  try {
    if (names.length === 0) stat = yield ['lstat', real];
    for (const name of names) {
      real = real.endsWith(nodePath.sep) ? real + name : real + nodePath.sep + name;
      stat = yield ['lstat', real];
      if (stat.isSymbolicLink()) return LINK;
    }
  } catch (err) {
    return failed(err);
  }
  return kindOf(real, stat);
}

function* inspecting(file, realRoot) {
  let real;
  let stat;
  try {
    real = yield ['realpath', file];
    if (!within(real, realRoot)) return { kind: 'refused', status: 404, why: 'a symbolic link out of the root' };
    // lstat: the real path holds no link, unless one was put there since; then it is not followed.
    stat = yield ['lstat', real];
  } catch (err) {
    return failed(err);
  }
  return kindOf(real, stat);
}

function kindOf(real, stat) {
  if (stat.isFile()) return { kind: 'file', real, stat };
  if (stat.isDirectory()) return { kind: 'directory', real, stat };
  return { kind: 'refused', status: 404, why: 'neither a regular file nor a directory' };
}

// A file system call's error as what the path names: nothing (404), nothing lila may read (403), or thrown.
function failed(err) {
  if (MISSING.has(err.code)) return { kind: 'missing' };
  if (DENIED.has(err.code)) return { kind: 'refused', status: 403, why: 'permission denied' };
  throw err;
}

// An index name that is one component, which `walking` can take.
function plainName(name) {
  return name !== '.' && name !== '..' && !name.includes('/') && !name.includes(nodePath.sep);
}

function* realRootOf(root) {
  try {
    return yield ['realpath', root];
  } catch (err) {
    if (MISSING.has(err.code)) return null;
    throw err;
  }
}

function runAsync(steps, step = steps.next()) {
  if (step.done) return Promise.resolve(step.value);
  const [call, file] = step.value;
  return ASYNC[call](file).then((answer) => runAsync(steps, steps.next(answer)), (err) => runAsync(steps, steps.throw(err)));
}

function runSync(steps) {
  let step = steps.next();
  while (!step.done) {
    const [call, file] = step.value;
    let answer;
    try {
      answer = SYNC[call](file);
    } catch (err) {
      step = steps.throw(err);
      continue;
    }
    step = steps.next(answer);
  }
  return step.value;
}
