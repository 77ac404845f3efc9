'use strict';

const fs = require('node:fs');
const { resolveFileSync, realRootSync } = require('./resolve');
const { openFileSync } = require('./open');
const { contentTypeOf } = require('./mime');
const { etagOf, lastModifiedOf, preconditions } = require('./validators');
const { formatHttpDate } = require('./http-date');
const { parseRange, ifRangeAllows, multipartByteranges, contentRange, unsatisfiedRange } = require('./ranges');
const { precompressedSiblingsSync, chooseSibling } = require('./precompressed');
const { directoryEntries } = require('./entries');
const { listingHtml } = require('./listing');
const { fileBody, multipartBody, multipartFromBytes } = require('./file-body');
const { RememberedFiles } = require('./remembered');
const LocalResponse = require('../http/lifecycle/local-response');
const { LilaError, codes } = require('../errors');

const HTML = 'text/html; charset=utf-8';

/**
 * `--root DIR` on a route: a feature of the request lifecycle that answers
 * GET and HEAD from the files under DIR, before the route's pool
 * (http/lifecycle/observers.js, `answer`), as nginx's `root` and
 * `try_files $uri $uri/ @app` do: the request target (after the route's
 * path edits, `--strip-prefix` among them) appended to DIR; a file is
 * served with its type, validators and ranges (RFC 9110); a directory
 * without its slash is redirected to it, with it is answered by its index
 * (`--index`), a listing (`--browse`) or nothing; what is no file goes to
 * the pool, or gets `--fallback`'s file, or, without a pool, 404. Nothing
 * outside DIR is ever served (resolve.js).
 *
 * Files are looked up and opened on the event loop, as nginx does (no
 * threadpool round trip per request); a short file is read at once, a long
 * one streamed with backpressure. Every request looks its file up: a file
 * changed on disk is served changed by the next request; a small one seen
 * unchanged since it was read is answered from memory (remembered.js).
 */
class StaticFiles {
  /**
   * @param {{root?: string, index?: string[], browse?: boolean, fallback?: string, precompressed?: boolean}} options a
   *   route's (config/options.js reads and checks them)
   * @param {string} where names the route in messages
   * @param {boolean} hasPool the route sends to a pool what no file answers
   * @returns {StaticFiles | null} null: the route has no --root
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for a file option without --root
   */
  static from(options, where, hasPool) {
    if (options.root === undefined) {
      const stray = ['index', 'browse', 'fallback', 'precompressed'].find((name) => options[name] !== undefined);
      if (stray !== undefined) throw new LilaError(codes.INVALID_OPTION, `${where}: --${stray} goes with --root, which names the directory`);
      return null;
    }
    return new StaticFiles(options, hasPool);
  }

  constructor(options, hasPool) {
    this.root = options.root;
    this.index = options.index || ['index.html'];
    this.browse = options.browse === true;
    this.fallback = options.fallback === undefined ? null : options.fallback;
    this.precompressed = options.precompressed === true;
    this.hasPool = hasPool;
    this.remembered = new RememberedFiles();
  }

  /**
   * The lifecycle's `answer` point: the request's answer from the files, or
   * null to send it to the route's pool.
   *
   * @param {import('../http/lifecycle/passage')} passage
   * @returns {LocalResponse | LilaError | null | Promise<LocalResponse | LilaError | null>}
   */
  answer(passage) {
    const { method } = passage.request;
    if (method !== 'GET' && method !== 'HEAD') return this.hasPool ? null : notAllowed();
    const target = passage.target;
    const query = target.indexOf('?');
    const found = this.resolve(query === -1 ? target : target.slice(0, query));
    if (found instanceof LilaError) return found;
    if (found.kind === 'file') {
      const answer = this.fileAnswer(passage, found);
      if (answer !== null) return answer;
    } else if (found.kind === 'directory') {
      if (!found.slash) return redirectToDirectory(passage.request.url);
      if (this.browse) return this.listing(passage, found);
    } else if (found.kind === 'refused' && !this.hasPool && this.fallback === null) {
      return quiet(new LilaError(found.status === 400 ? codes.BAD_REQUEST : found.status === 403 ? codes.FORBIDDEN : codes.NO_FILE, `no file: ${found.why}`, found.status));
    }
    return this.missing(passage);
  }

  // What no file answers: --fallback's file, else the pool, else 404.
  missing(passage) {
    if (this.fallback !== null) {
      const found = this.resolve(this.fallback);
      if (!(found instanceof LilaError) && found.kind === 'file') {
        const answer = this.fileAnswer(passage, found);
        if (answer !== null) return answer;
      }
    }
    if (this.hasPool) return null;
    return quiet(new LilaError(codes.NO_FILE, 'no such file', 404));
  }

  // resolveFileSync, lila's own errors (out of descriptors, an I/O error) as answers. The root's
  // real path is read only where a link below it, a sibling or a listing needs it (realRoot()).
  resolve(path) {
    try {
      return resolveFileSync(this.root, path, { index: this.index, lazyRealRoot: true });
    } catch (err) {
      return localError(err);
    }
  }

  // What resolve() found's links are checked against: the root's real path, read now if it was not; null: the root is gone.
  realRoot(found) {
    return found.realRoot !== null ? found.realRoot : realRootSync(this.root);
  }

  /**
   * A file's answer: 200 with the file (or its precompressed sibling), 206
   * with ranges of it, 304 or 412 by the request's preconditions, 416 for
   * ranges it does not have; null when the file went away since it was found.
   */
  fileAnswer(passage, found) {
    const request = passage.request;
    let chosen = found;
    let coding = null;
    let vary = false;
    if (this.precompressed) {
      let realRoot;
      try {
        realRoot = this.realRoot(found);
      } catch (err) {
        return localError(err);
      }
      const siblings = realRoot === null ? [] : precompressedSiblingsSync(found, realRoot);
      vary = siblings.length > 0;
      const sibling = vary ? chooseSibling(request.headers['accept-encoding'], siblings) : null;
      if (sibling !== null) {
        chosen = sibling;
        coding = sibling.coding;
      }
    }
    // A small file unchanged since it was read: from memory (remembered.js), else from disk.
    const kept = this.remembered.get(chosen.file, chosen.stat);
    let fd = -1;
    let stat;
    let etag;
    let lastModified;
    if (kept !== null) {
      ({ stat, etag, lastModified } = kept);
    } else {
      let opened;
      try {
        opened = openFileSync(chosen);
      } catch (err) {
        return localError(err);
      }
      if (opened === null) return null;
      ({ fd, stat } = opened);
      etag = etagOf(stat, coding);
      lastModified = lastModifiedOf(stat);
    }
    const type = contentTypeOf(found.path);
    const now = Date.now();
    // Date: an origin server with a clock sends it (RFC 9110 §6.6.1), as nginx does.
    const headers = ['Date', formatHttpDate(now), 'Last-Modified', lastModified, 'ETag', etag, 'Accept-Ranges', 'bytes'];
    if (vary) headers.push('Vary', 'Accept-Encoding');
    const validators = { etag, lastModified };
    const precondition = preconditions(request, validators, request.method);
    if (precondition !== null) {
      closeFile(fd);
      if (precondition === 304) return new LocalResponse(304, headers, null, 0);
      return quiet(new LilaError(codes.PRECONDITION_FAILED, 'a precondition of the request does not hold', 412), headers);
    }
    if (coding !== null) headers.push('Content-Encoding', coding);
    const size = stat.size;
    const range = request.headers.range;
    const ranges = range === undefined || request.method !== 'GET' || !ifRangeAllows(request.headers['if-range'], validators)
      ? null : parseRange(range, size);
    if (ranges === 'unsatisfiable') {
      closeFile(fd);
      return quiet(new LilaError(codes.RANGE_NOT_SATISFIABLE, 'the file has none of the ranges asked for', 416), ['Content-Range', unsatisfiedRange(size), ...headers]);
    }
    if (ranges === null || ranges.length === 1) {
      const { start, end } = ranges === null ? { start: 0, end: size - 1 } : ranges[0];
      const length = end - start + 1;
      headers.push('Content-Type', type, 'Content-Length', String(length));
      if (ranges !== null) headers.push('Content-Range', contentRange(start, end, size));
      const status = ranges === null ? 200 : 206;
      if (request.method === 'HEAD') {
        closeFile(fd);
        return new LocalResponse(status, headers, null, length);
      }
      if (kept !== null) return new LocalResponse(status, headers, ranges === null ? kept.body : kept.body.subarray(start, end + 1), length);
      const keep = ranges === null && this.remembered.takes(stat, now);
      const body = fileBody(fd, start, end, keep);
      if (keep) this.remembered.keep(chosen.file, stat, body, etag, lastModified);
      return new LocalResponse(status, headers, body, length);
    }
    const multipart = multipartByteranges(ranges, size, type);
    headers.push('Content-Type', multipart.contentType, 'Content-Length', String(multipart.contentLength));
    const body = kept !== null ? multipartFromBytes(kept.body, multipart) : multipartBody(fd, multipart);
    return new LocalResponse(206, headers, body, multipart.contentLength);
  }

  // --browse: a directory without an index, listed (its dotfiles left out).
  async listing(passage, found) {
    let entries;
    try {
      const realRoot = this.realRoot(found);
      if (realRoot === null) return this.missing(passage);
      entries = await directoryEntries(found.dir, realRoot);
    } catch (err) {
      return localError(err);
    }
    const url = passage.request.url;
    const query = url.indexOf('?');
    const page = Buffer.from(listingHtml(query === -1 ? url : url.slice(0, query), entries));
    const headers = ['Content-Type', HTML, 'Content-Length', String(page.length)];
    return new LocalResponse(200, headers, passage.request.method === 'HEAD' ? null : page, page.length);
  }
}

module.exports = StaticFiles;

// Other methods than GET and HEAD, on a route of files alone.
function notAllowed() {
  return quiet(new LilaError(codes.METHOD_NOT_ALLOWED, 'a route of files answers GET and HEAD only', 405), ['Allow', 'GET, HEAD']);
}

// What a client asked that no file answers is no failure of lila's: logged at debug only; `fields` go with the answer.
function quiet(error, fields) {
  return Object.assign(error, fields === undefined ? { quiet: true } : { quiet: true, fields });
}

// A directory asked without its slash: to it, the query kept (as nginx and Caddy do).
function redirectToDirectory(url) {
  const query = url.indexOf('?');
  const location = query === -1 ? `${url}/` : `${url.slice(0, query)}/${url.slice(query)}`;
  return new LocalResponse(301, ['Location', location, 'Content-Length', '0'], null, 0);
}

// A file opened for an answer that sends none of it (-1: none was opened, the answer is from memory).
function closeFile(fd) {
  if (fd !== -1) fs.closeSync(fd);
}

// lila's own trouble with the file system: out of descriptors (503), or an I/O error (500); no file is to blame.
function localError(err) {
  if (err.code === 'EMFILE' || err.code === 'ENFILE') {
    return Object.assign(new LilaError(codes.RESOURCES, 'lila is out of file descriptors', 503), { retryAfter: 1 });
  }
  return new LilaError(codes.RESOURCES, `the file could not be read (${err.code || err.message})`, 500);
}
