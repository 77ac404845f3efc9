'use strict';

/**
 * Why a token was not taken: `reason` is one short phrase, safe to show the
 * client (RFC 6750's `error_description`) and to log; `unavailable` says the
 * fault was lila's (the keys could not be read), not the token's.
 */
class TokenError extends Error {
  /**
   * @param {string} reason e.g. `the token has expired`
   * @param {{unavailable?: boolean}} [options]
   */
  constructor(reason, options = {}) {
    super(reason);
    this.name = 'TokenError';
    this.reason = reason;
    this.unavailable = options.unavailable === true;
  }
}

module.exports = TokenError;
