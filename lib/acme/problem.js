'use strict';

const ERROR_PREFIX = 'urn:ietf:params:acme:error:';
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;

/**
 * What an ACME CA refused, or an object of it (challenge, authorization, order) that
 * became invalid: `problem` is the CA's problem document (RFC 8555 §6.7, RFC 7807).
 */
class AcmeError extends Error {
  /**
   * @param {string} url the request's URL, or the object's
   * @param {{type?: string, detail?: string, status?: number, subproblems?: object[]}} problem
   * @param {{status?: number | null, retryAfter?: number | null}} [options] `status` the HTTP
   *   status (the problem's own when not given); `retryAfter` in ms, when the CA said when to come back
   */
  constructor(url, problem, { status = null, retryAfter = null } = {}) {
    super(`acme: ${url}: ${describeProblem(problem)}`);
    this.name = 'AcmeError';
    this.code = 'LILA_ERR_ACME';
    this.url = url;
    this.problem = problem;
    this.status = status !== null ? status : (Number.isInteger(problem.status) ? problem.status : null);
    this.retryAfter = retryAfter;
  }

  /**
   * The problem's type without `urn:ietf:params:acme:error:` (`badNonce`, `rateLimited`), or
   * the whole type for one outside that namespace.
   *
   * @returns {string}
   */
  get type() {
    return shortType(this.problem.type);
  }
}

/**
 * A Retry-After header's delay (RFC 9110 §10.2.3: seconds, or an HTTP date) in ms from `now`.
 *
 * @param {string | undefined} value
 * @param {number} [now] ms since the epoch
 * @returns {number | null} null when absent or unreadable; never negative
 */
function retryAfterMs(value, now = Date.now()) {
  if (value === undefined || value === '') return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/**
 * A problem's type without the ACME namespace's prefix.
 *
 * @param {string | undefined} type
 * @returns {string}
 */
function shortType(type) {
  if (typeof type !== 'string' || type === '') return 'about:blank';
  return type.startsWith(ERROR_PREFIX) ? type.slice(ERROR_PREFIX.length) : type;
}

/**
 * The error of a CA's error answer: its problem document when it sent one, else its status
 * and first bytes. A rate limit or a 503 carries the answer's Retry-After.
 *
 * @param {string} url
 * @param {{status: number, headers: object, body: Buffer}} response
 * @returns {AcmeError}
 */
function problemError(url, response) {
  let problem = null;
  if (JSON_TYPE.test(response.headers['content-type'] || '')) {
    try {
      problem = JSON.parse(response.body.toString('utf8'));
    } catch {
      // Not JSON after all: described by its bytes below.
    }
  }
  if (problem === null || typeof problem !== 'object' || Array.isArray(problem)) {
    const text = response.body.toString('utf8', 0, 200).replace(/\s+/g, ' ').trim();
    problem = { type: 'about:blank', detail: `HTTP ${response.status}${text === '' ? '' : `: ${text}`}` };
  }
  const limited = shortType(problem.type) === 'rateLimited' || response.status === 503;
  const retryAfter = limited ? retryAfterMs(response.headers['retry-after']) : null;
  return new AcmeError(url, problem, { status: response.status, retryAfter });
}

/**
 * The error of an ACME object that became invalid: its own `error`, or, for an
 * authorization, its failed challenge's.
 *
 * @param {string} url the object's
 * @param {{error?: object, challenges?: object[], identifier?: {value: string}}} object
 * @returns {AcmeError}
 */
function invalidError(url, object) {
  if (object.error) return new AcmeError(url, object.error);
  const failed = (object.challenges || []).find((challenge) => challenge.status === 'invalid' && challenge.error);
  if (failed) return new AcmeError(failed.url || url, failed.error);
  const what = object.identifier ? ` (${object.identifier.value})` : '';
  return new AcmeError(url, { type: 'about:blank', detail: `became invalid${what} and the CA said no more` });
}

module.exports = { AcmeError, ERROR_PREFIX, JSON_TYPE, problemError, invalidError, retryAfterMs, shortType };

// `detail (type)`, then each subproblem's identifier and detail: what an operator needs in one line.
function describeProblem(problem) {
  const detail = typeof problem.detail === 'string' && problem.detail !== '' ? problem.detail : 'no detail given';
  let text = `${detail} (${shortType(problem.type)})`;
  for (const sub of Array.isArray(problem.subproblems) ? problem.subproblems : []) {
    const who = sub.identifier && sub.identifier.value ? `${sub.identifier.value}: ` : '';
    text += `; ${who}${sub.detail || 'no detail given'} (${shortType(sub.type)})`;
  }
  return text;
}
