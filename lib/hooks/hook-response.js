'use strict';

const { fieldsObject, fieldChanges } = require('./hook-fields');
const { withFields } = require('../http/lifecycle/request-edits');
const { LilaError, codes } = require('../errors');

/**
 * An answer as `onResponse` and `transformResponse` read it (`res`): its
 * status and fields as the client would get them, both writable in
 * `onResponse`.
 */
class HookResponse {
  /**
   * @param {number} status
   * @param {string[]} headers `[name, value, ...]`
   * @param {boolean} bodiless
   */
  constructor(status, headers, bodiless) {
    this.status = status;
    this.headers = fieldsObject(headers);
    this.given = { status, headers, fields: { ...this.headers }, bodiless };
  }

  /**
   * The status and fields the client gets, as the hook left them.
   *
   * @returns {{status: number, headers: string[]}}
   * @throws {LilaError} `LILA_ERR_HOOK` for a status or a field lila cannot send
   */
  result() {
    const { given } = this;
    const status = this.status;
    if (!Number.isInteger(status) || status < 200 || status > 599) {
      throw new LilaError(codes.HOOK, `onResponse set the status to ${JSON.stringify(status)}: 200 to 599`, 500);
    }
    if (status !== given.status && !given.bodiless && (status === 204 || status === 304)) {
      throw new LilaError(codes.HOOK, `onResponse set the status of an answer with a body to ${status}, which has none`, 500);
    }
    const changes = fieldChanges(given.fields, this.headers, 'onResponse');
    return { status, headers: changes === null ? given.headers : withFields(given.headers, changes) };
  }
}

module.exports = HookResponse;
