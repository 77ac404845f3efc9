'use strict';

const Balancer = require('./balancer');
const Logger = require('./logger');
const { createHttpServer } = require('./http-proxy');
const { createTcpServer } = require('./tcp-proxy');
const { formatHostPort } = require('./address');
const { validateChoice, validatePort } = require('./validate');
const { LilaError, codes } = require('./errors');

const LAYERS = ['http', 'tcp'];
const LISTEN_ERRORS = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'address not available on this machine',
  ENOTFOUND: 'no such host'
};

/**
 * A load balancer: a balancer (backends and strategy) behind a listener of
 * one layer.
 */
class Proxy {
  /**
   * @param {object} options
   * @param {string} options.mode a strategy name, e.g. `round-robin`
   * @param {(string | object)[]} options.servers `host:port[,weight=N][,backup]` strings
   * @param {'http' | 'tcp'} [options.layer] defaults to `http`
   * @param {Logger} [options.logger] defaults to info lines on stderr
   * @throws {LilaError} for invalid options or servers
   */
  constructor(options) {
    this.layer = validateChoice(options.layer === undefined ? 'http' : options.layer, LAYERS, 'layer');
    this.logger = options.logger || new Logger();
    this.balancer = new Balancer(options.mode, options.servers);
    this.server = this.layer === 'tcp'
      ? createTcpServer(this.balancer, this.logger)
      : createHttpServer(this.balancer, this.logger);
  }

  /** @returns {import('./backend')[]} the backends, in the order given */
  get backends() {
    return this.balancer.backends;
  }

  /**
   * Starts listening.
   *
   * @param {number} [port] defaults to 4444; 0 picks a free port
   * @param {string} [host] defaults to all interfaces
   * @returns {Promise<{address: string, port: number, family: string}>}
   * @throws {LilaError} `LILA_ERR_LISTEN` naming the address and the reason
   */
  listen(port = 4444, host = undefined) {
    validatePort(port, 'port');
    return new Promise((resolve, reject) => {
      const onError = (err) => {
        const where = formatHostPort(host === undefined ? '::' : host, port);
        const reason = LISTEN_ERRORS[err.code] || err.message;
        reject(new LilaError(codes.LISTEN, `cannot listen on ${where}: ${reason}`));
      };
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.removeListener('error', onError);
        // Once listening, only accept() fails here (EMFILE, ...): keep serving.
        this.server.on('error', (err) => {
          this.logger.warn(`cannot accept a connection: ${err.code || err.message}`);
        });
        resolve(this.server.address());
      });
    });
  }

  /**
   * Stops accepting connections, closes idle keep-alive ones, and resolves
   * once every open connection has ended.
   *
   * @returns {Promise<void>}
   */
  close() {
    return new Promise((resolve) => {
      this.server.close(() => {
        for (const backend of this.backends) if (backend.agent !== null) backend.agent.destroy();
        resolve();
      });
      if (this.layer === 'http') this.server.closeIdleConnections();
    });
  }
}

module.exports = Proxy;
module.exports.LAYERS = LAYERS;
