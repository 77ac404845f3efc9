'use strict';

/**
 * What a feature on the request's way changed of it (a hook's `onRequest`)
 * and of its answer (its `onResponse`), applied by every engine after the
 * route's own edits: the request target its backend gets, fields set or
 * removed, and the status the client gets.
 */
class RequestEdits {
  constructor() {
    /** The request target in place of the route's; null: unchanged. */
    this.target = null;
    /** @type {Map<string, string | string[] | null> | null} request fields by lower-case name: the values, or null (removed) */
    this.fields = null;
    /** The answer's status in place of its own; 0: unchanged. */
    this.status = 0;
  }

  /**
   * `headers` with the changed fields: every field of a changed name out,
   * its new values (if any) at the end.
   *
   * @param {string[]} headers `[name, value, ...]`
   * @returns {string[]}
   */
  headersOf(headers) {
    return this.fields === null ? headers : withFields(headers, this.fields);
  }
}

/**
 * `headers` with `changes` applied: the fields of each changed name out, its values added.
 *
 * @param {string[]} headers `[name, value, ...]`
 * @param {Map<string, string | string[] | null>} changes by lower-case name; null: removed
 * @returns {string[]}
 */
function withFields(headers, changes) {
  const out = [];
  for (let i = 0; i < headers.length; i += 2) if (!changes.has(headers[i].toLowerCase())) out.push(headers[i], headers[i + 1]);
  for (const [name, value] of changes) {
    if (value === null) continue;
    if (Array.isArray(value)) for (const one of value) out.push(name, one);
    else out.push(name, value);
  }
  return out;
}

module.exports = { RequestEdits, withFields };
