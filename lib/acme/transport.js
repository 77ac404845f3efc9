'use strict';

const http = require('node:http');
const https = require('node:https');
const { urlToHttpOptions } = require('node:url');
const { version } = require('../../package.json');
const { describeError } = require('../errors');
const { exchange } = require('../net/http-exchange');

const USER_AGENT = `lila-lb/${version}`;
// A CA's answers are small JSON documents and PEM chains: more than this is not a CA talking.
const MAX_BODY = 4 * 1024 * 1024;

/**
 * The HTTP side of an ACME client: one keep-alive agent per scheme of its own, the CA's
 * trust anchor for https, a deadline on every exchange (`net/http-exchange.js`, which
 * also sends a request again once when the CA closed its kept-alive connection: safe for
 * ACME, a POST's nonce is spent at most once, a replay is a badNonce), errors that name
 * the URL. Its answers are bytes: JOSE documents, problem documents and PEM chains are
 * the ACME client's to read.
 */
class Transport {
  /**
   * @param {{ca?: string, timeout: number}} options `ca` a PEM trusted instead of Node's
   *   default CAs; `timeout` ms for a whole exchange, connect to last byte
   */
  constructor({ ca, timeout }) {
    this.timeout = timeout;
    this.agents = {
      'https:': new https.Agent({ keepAlive: true, ...(ca === undefined ? {} : { ca }) }),
      'http:': new http.Agent({ keepAlive: true })
    };
  }

  /**
   * One exchange; any status resolves, only the network fails.
   *
   * @param {string} method
   * @param {string} url
   * @param {{headers?: object, body?: string}} [options]
   * @returns {Promise<{status: number, headers: http.IncomingHttpHeaders, body: Buffer}>}
   * @throws {Error} `acme: METHOD URL failed: ...`, with the cause's code (`ECONNREFUSED`,
   *   `ETIMEDOUT`, a TLS code) as `code`
   */
  request(method, url, { headers = {}, body } = {}) {
    let target;
    try {
      target = new URL(url);
    } catch {
      return Promise.reject(new TypeError(`acme: "${url}" is not a URL`));
    }
    const agent = this.agents[target.protocol];
    if (agent === undefined) return Promise.reject(new TypeError(`acme: "${url}" is neither http: nor https:`));
    const options = { ...urlToHttpOptions(target), method, agent, headers: { 'user-agent': USER_AGENT, ...headers } };
    if (body !== undefined) options.headers['content-length'] = Buffer.byteLength(body);
    return exchange(target.protocol === 'https:' ? https : http, options, body === undefined ? null : body, { timeout: this.timeout, maxBody: MAX_BODY })
      .catch((err) => {
        throw Object.assign(new Error(`acme: ${method} ${url} failed: ${describeError(err)}`), { code: err.code, cause: err.cause || err });
      });
  }

  /** Closes the idle keep-alive connections; later requests open new ones. */
  close() {
    for (const agent of Object.values(this.agents)) agent.destroy();
  }
}

module.exports = { Transport, USER_AGENT };
