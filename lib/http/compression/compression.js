'use strict';

const { Encoder } = require('./encoder');
const { shouldCompress, negotiate, compressedHeaders, withVary, announcedLength, CODINGS, MIN_LENGTH } = require('./rules');
const { LilaError, codes } = require('../../errors');

const DEFAULT_GZIP_LEVEL = 5;

/**
 * `--compress [level]`: the responses of a route compressed with brotli,
 * zstd or gzip as the client's Accept-Encoding asks: a feature on the
 * request lifecycle (../lifecycle/observers.js). Which responses, and how
 * their heads change, is decided here; the encoder is the response's body
 * filter: the engines hand it the body's bytes and write what it gives.
 */
class Compression {
  /**
   * @param {boolean | string | number | undefined} value true, or gzip's level (1 to 9)
   * @param {string} where names the route, for messages
   * @returns {Compression | null}
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for a level out of range
   */
  static from(value, where) {
    if (value === undefined || value === false) return null;
    if (value === true || value === '') return new Compression(DEFAULT_GZIP_LEVEL);
    const level = Number(value);
    if (!Number.isInteger(level) || level < 1 || level > 9) {
      throw new LilaError(codes.INVALID_OPTION, `${where}: --compress "${value}": the level is gzip's, from 1 to 9`);
    }
    return new Compression(level);
  }

  /** @param {number} gzipLevel */
  constructor(gzipLevel) {
    this.gzipLevel = gzipLevel;
  }

  /**
   * The lifecycle's `forwarded` point (../lifecycle/observers.js): the
   * route's compression observes each of its requests' responses; it keeps
   * nothing per request, so it is its own observer.
   *
   * @returns {Compression}
   */
  open() {
    return this;
  }

  /**
   * The lifecycle's response head: the head as the client gets it, and, for
   * a body to compress, the encoder put on it as the passage's body filter.
   *
   * @param {{request: object, filterBody: (filter: Encoder) => void}} passage
   * @param {number} status
   * @param {string[]} headers `[name, value, ...]` as the client would get them
   * @param {boolean} bodiless no body follows (HEAD, 204, 304): nothing to compress; a HEAD
   *   gets the head its GET would (RFC 9110 §9.3.2)
   * @returns {string[]}
   */
  responseHead(passage, status, headers, bodiless) {
    const head = passage.request.method === 'HEAD';
    if (bodiless && !head) return headers;
    const plan = this.plan(status, headers, passage.request);
    if (plan === null) return headers;
    if (plan.coding !== null && !head) passage.filterBody(this.encoder(plan, passage));
    return plan.headers;
  }

  /**
   * What becomes of a response: null when compression does not apply to it
   * (its head goes out as it is); else its head (with `Vary: Accept-Encoding`,
   * and when compressed without Content-Length, with its coding and a weak
   * ETag), the coding (null when the client accepts none) and the length
   * announced (-1: none).
   *
   * @param {number} status
   * @param {string[]} headers `[name, value, ...]` as the client would get them
   * @param {{method: string, headers: object}} request
   * @returns {{headers: string[], coding: string | null, length: number} | null}
   */
  plan(status, headers, request) {
    if (!shouldCompress(status, headers, request)) return null;
    const coding = negotiate(request.headers['accept-encoding']);
    return {
      headers: coding === null ? withVary(headers) : compressedHeaders(headers, coding),
      coding,
      length: announcedLength(headers)
    };
  }

  /**
   * @param {{coding: string, length: number}} plan from plan()
   * @param {object} owner gets `filterData(chunk)`, `filterDrained()`, `filterEnded()`, `filterFailed(err)`
   * @returns {Encoder}
   */
  encoder(plan, owner) {
    return new Encoder(plan.coding, this.gzipLevel, plan.length, owner);
  }
}

module.exports = { Compression, Encoder, shouldCompress, negotiate, compressedHeaders, CODINGS, MIN_LENGTH };
