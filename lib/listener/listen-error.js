'use strict';

const { formatHostPort } = require('../net/address');
const { LilaError, codes } = require('../errors');

const LISTEN_ERRORS = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'address not available on this machine',
  ENOTFOUND: 'no such host'
};

/**
 * Why a listener (or the admin API, or a redirect) could not listen, in one line.
 *
 * @param {Error & {code?: string}} err why listen() failed
 * @param {string | undefined} host
 * @param {number} port
 * @returns {LilaError} `LILA_ERR_LISTEN`: `cannot listen on <host:port>: <reason>`
 */
function listenError(err, host, port) {
  const where = formatHostPort(host === undefined ? '::' : host, port);
  return new LilaError(codes.LISTEN, `cannot listen on ${where}: ${LISTEN_ERRORS[err.code] || err.message}`);
}

module.exports = { listenError };
