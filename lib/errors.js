'use strict';

/**
 * Error codes lila uses. Usage errors (exit 2 from the CLI) are the ones in `USAGE_CODES`.
 */
const codes = {
  INVALID_OPTION: 'LILA_ERR_INVALID_OPTION',
  INVALID_SERVER: 'LILA_ERR_INVALID_SERVER',
  UNKNOWN_MODE: 'LILA_ERR_UNKNOWN_MODE',
  INVALID_MODULE: 'LILA_ERR_INVALID_MODULE',
  NO_SERVERS: 'LILA_ERR_NO_SERVERS',
  HOSTS_FILE: 'LILA_ERR_HOSTS_FILE',
  TLS_CERTIFICATE: 'LILA_ERR_TLS_CERTIFICATE',
  LISTEN: 'LILA_ERR_LISTEN',
  BAD_REQUEST: 'LILA_ERR_BAD_REQUEST',
  REQUEST_TIMEOUT: 'LILA_ERR_REQUEST_TIMEOUT',
  HEADERS_TOO_LARGE: 'LILA_ERR_HEADERS_TOO_LARGE',
  URI_TOO_LONG: 'LILA_ERR_URI_TOO_LONG',
  VERSION_NOT_SUPPORTED: 'LILA_ERR_VERSION_NOT_SUPPORTED',
  METHOD_NOT_SUPPORTED: 'LILA_ERR_METHOD_NOT_SUPPORTED',
  CODING_NOT_SUPPORTED: 'LILA_ERR_CODING_NOT_SUPPORTED',
  NO_BACKEND: 'LILA_ERR_NO_BACKEND',
  UNAVAILABLE: 'LILA_ERR_UNAVAILABLE',
  RESOURCES: 'LILA_ERR_RESOURCES',
  UPSTREAM: 'LILA_ERR_UPSTREAM',
  TIMEOUT: 'LILA_ERR_TIMEOUT',
  QUEUE_FULL: 'LILA_ERR_QUEUE_FULL',
  QUEUE_TIMEOUT: 'LILA_ERR_QUEUE_TIMEOUT',
  RATE_LIMITED: 'LILA_ERR_RATE_LIMITED',
  BODY_TOO_LARGE: 'LILA_ERR_BODY_TOO_LARGE',
  NO_ROUTE: 'LILA_ERR_NO_ROUTE',
  CONFIG: 'LILA_ERR_CONFIG',
  ACME: 'LILA_ERR_ACME',
  // A route's access control refused the request (--allow, --deny; --basic-auth).
  FORBIDDEN: 'LILA_ERR_FORBIDDEN',
  UNAUTHORIZED: 'LILA_ERR_UNAUTHORIZED',
  // The library's registry of pools of values (`pools`, erlpool's API).
  POOL_EXISTS: 'LILA_ERR_POOL_EXISTS',
  UNKNOWN_POOL: 'LILA_ERR_UNKNOWN_POOL',
  MEMBER_START: 'LILA_ERR_MEMBER_START',
  MEMBER_STOP: 'LILA_ERR_MEMBER_STOP',
  // A call to a store (etcd: --store; Redis: --rate-limit-store) failed: refused, or no answer (`err.unavailable`).
  STORE: 'LILA_ERR_STORE',
  // --root: no file for the path (404), a method files do not answer (405), a precondition that fails (412),
  // ranges the file does not have (416).
  NO_FILE: 'LILA_ERR_NO_FILE',
  // --hook: a hook module that does not load, or a call of it that threw, rejected or answered what it may not (500).
  HOOK: 'LILA_ERR_HOOK',
  METHOD_NOT_ALLOWED: 'LILA_ERR_METHOD_NOT_ALLOWED',
  PRECONDITION_FAILED: 'LILA_ERR_PRECONDITION_FAILED',
  RANGE_NOT_SATISFIABLE: 'LILA_ERR_RANGE_NOT_SATISFIABLE'
};

const USAGE_CODES = new Set([
  codes.INVALID_OPTION,
  codes.INVALID_SERVER,
  codes.UNKNOWN_MODE,
  codes.INVALID_MODULE,
  codes.NO_SERVERS,
  codes.HOSTS_FILE,
  codes.TLS_CERTIFICATE,
  codes.CONFIG
]);

/**
 * An error lila raises itself, with a stable `LILA_ERR_*` code and, when it
 * maps to an HTTP answer, the status lila sends.
 */
// C0 controls, DEL and the Unicode line separators.
const CONTROL = /[\x00-\x1f\x7f\u2028\u2029]/g;

class LilaError extends Error {
  /**
   * @param {string} code one of `codes`
   * @param {string} message one sentence, without the `lila: ` prefix; control bytes it quotes
   *   from a file or an argument (NUL, ESC, CR, LF...) are shown escaped, so that it stays one
   *   line that shows what is wrong
   * @param {number} [status] HTTP status the error maps to
   */
  constructor(code, message, status) {
    super(message.replace(CONTROL, escapeControl));
    this.name = 'LilaError';
    this.code = code;
    if (status !== undefined) this.status = status;
  }

  /**
   * Whether the error comes from bad input (CLI exit code 2).
   *
   * @returns {boolean}
   */
  get isUsageError() {
    return USAGE_CODES.has(this.code);
  }
}

/**
 * An upstream timeout, shaped like a socket error so it is logged and
 * handled the same way.
 *
 * @param {string} message what did not happen in time, e.g. `silent for 60000 ms`
 * @returns {Error & {code: 'ETIMEDOUT'}}
 */
function timeoutError(message) {
  return Object.assign(new Error(message), { code: 'ETIMEDOUT' });
}

/**
 * A socket error in a log line: its code (`ECONNRESET`), or for lila's own
 * timeouts and code-less errors, the message.
 *
 * @param {Error & {code?: string}} err
 * @returns {string}
 */
function describeError(err) {
  return err.code === 'ETIMEDOUT' || !err.code ? err.message : err.code;
}

module.exports = { LilaError, codes, timeoutError, describeError };

function escapeControl(c) {
  const code = c.charCodeAt(0);
  return code > 0xff ? `\\u${code.toString(16)}` : `\\x${code.toString(16).padStart(2, '0')}`;
}
