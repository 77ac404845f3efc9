'use strict';

const { LilaError, codes } = require('../errors');

// gRPC's UNAUTHENTICATED, what etcd answers to a token it does not know (any more).
const UNAUTHENTICATED = 16;

/**
 * The token of a client with a user: got from `/v3/auth/authenticate` on
 * first use, got again when etcd refuses it. A store without auth enabled
 * gives no token, and calls go without one.
 */
class EtcdAuth {
  /**
   * @param {import('./etcd-call').EtcdCall} call
   * @param {string | null} user no auth when null
   * @param {string | null} password
   */
  constructor(call, user, password) {
    this._call = call;
    this.user = user;
    this._password = password === null || password === undefined ? '' : password;
    // The token being got or got (a promise of it, null inside when auth is
    // off), and what it resolved to; null before the first call and after a failure.
    this._pending = null;
    this._value = undefined;
  }

  /**
   * The token to send (null without auth, or when the store has auth off).
   *
   * @returns {Promise<string | null>}
   */
  token() {
    if (this.user === null) return Promise.resolve(null);
    if (this._pending === null) this._authenticate();
    return this._pending;
  }

  /**
   * Gets a new token in place of `stale`, the one etcd refused; calls that
   * were refused the same token share one authentication.
   *
   * @param {string | null} stale
   * @returns {Promise<string | null>}
   */
  renew(stale) {
    if (this._pending === null || this._value === stale) this._authenticate();
    return this._pending;
  }

  /**
   * Whether a refused call asks for a new token (so `renew` and one more try).
   *
   * @param {Error & {grpcCode?: number, reason?: string}} err
   * @returns {boolean}
   */
  refusesToken(err) {
    return this.user !== null && isTokenRefusal(err.grpcCode, err.reason || '');
  }

  _authenticate() {
    this._value = undefined;
    const body = { name: this.user, password: this._password };
    const pending = this._call.post('/v3/auth/authenticate', body, null).then((answer) => {
      const token = typeof answer.token === 'string' && answer.token !== '' ? answer.token : null;
      if (this._pending === pending) this._value = token;
      return token;
    }, (err) => {
      if (err.reason && err.reason.includes('authentication is not enabled')) {
        if (this._pending === pending) this._value = null;
        return null;
      }
      if (this._pending === pending) this._pending = null;
      if (err.unavailable || err.closed || err.endpoint === undefined) throw err;
      const why = String(err.reason || err.message).replace(/^etcdserver: /, '').replace(/^authentication failed, /, '');
      const message = `etcd at ${err.endpoint}: authentication failed for user ${this.user} (${why})`;
      throw Object.assign(new LilaError(codes.STORE, message), { endpoint: err.endpoint, grpcCode: err.grpcCode, authentication: true });
    });
    this._pending = pending;
  }
}

/**
 * Whether an etcd answer (its gRPC code and message, or a watch's
 * cancel_reason) refuses the token sent: unknown or expired, or none sent to
 * a store that has since turned auth on.
 *
 * @param {number | undefined} grpcCode
 * @param {string} message
 * @returns {boolean}
 */
function isTokenRefusal(grpcCode, message) {
  return grpcCode === UNAUTHENTICATED || /invalid auth token|user name is empty/.test(message);
}

module.exports = { EtcdAuth, isTokenRefusal };
