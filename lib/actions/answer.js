'use strict';

const { STATUS_CODES } = require('node:http');

/**
 * An answer a route gives a request itself, which is no failure: a redirect
 * (`--redirect`), a fixed answer (`--respond`), a CORS preflight, an ACME
 * HTTP-01 token. A route's actions return one where the request would
 * otherwise go on to its pool; what refuses a request (403, 401, 429...) is
 * a `LilaError`, with its code in README's table of errors.
 */
class Answer {
  /**
   * @param {number} status
   * @param {string[]} fields `[name, value, ...]`, without framing (Content-Length, Date)
   * @param {string | Buffer} body
   * @param {string} [contentType] for a body that is not empty
   */
  constructor(status, fields, body, contentType) {
    this.status = status;
    this.fields = fields;
    this.body = body;
    this.contentType = contentType;
  }

  /** @returns {string} what log lines say of it: `308 Permanent Redirect` */
  get message() {
    return `${this.status} ${STATUS_CODES[this.status] || ''}`.trim();
  }
}

module.exports = Answer;
