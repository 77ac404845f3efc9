'use strict';

const http = require('node:http');
const https = require('node:https');
const { version } = require('../../package.json');
const { describeError } = require('../errors');

const USER_AGENT = `lila-lb/${version}`;
// A CA's answers are small JSON documents and PEM chains: more than this is not a CA talking.
const MAX_BODY = 4 * 1024 * 1024;

/**
 * The HTTP side of an ACME client: one keep-alive agent per scheme of its own, the CA's
 * trust anchor for https, a deadline on every exchange, errors that name the URL.
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
    const options = { method, agent, headers: { 'user-agent': USER_AGENT, ...headers } };
    if (body !== undefined) options.headers['content-length'] = Buffer.byteLength(body);
    const send = () => exchange(target.protocol === 'https:' ? https : http, target, options, body, this.timeout);
    return send()
      // A kept-alive connection the CA closed as it was reused: sent again once, on a new one
      // (safe for ACME: a POST's nonce is spent at most once, a replay is a badNonce).
      .catch((err) => (err.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE') ? send() : Promise.reject(err)))
      .catch((err) => {
        throw Object.assign(new Error(`acme: ${method} ${url} failed: ${describeError(err)}`), { code: err.code, cause: err });
      });
  }

  /** Closes the idle keep-alive connections; later requests open new ones. */
  close() {
    for (const agent of Object.values(this.agents)) agent.destroy();
  }
}

module.exports = { Transport, USER_AGENT };

// One request and its whole answer within `timeout` ms; an error says whether the socket was a reused one.
function exchange(transport, target, options, body, timeout) {
  return new Promise((resolve, reject) => {
    let timer = null;
    const request = transport.request(target, options);
    const settle = (err, value) => {
      if (timer === null) return;
      clearTimeout(timer);
      timer = null;
      if (err === null) resolve(value);
      else reject(Object.assign(err, { reusedSocket: request.reusedSocket }));
    };
    // The whole exchange, not just socket idleness: a CA trickling bytes is as stuck as a silent one.
    timer = setTimeout(() => {
      request.destroy(Object.assign(new Error(`no complete answer within ${timeout} ms`), { code: 'ETIMEDOUT' }));
    }, timeout);
    request.on('error', (err) => settle(err));
    request.on('response', (response) => {
      const chunks = [];
      let length = 0;
      response.on('data', (chunk) => {
        length += chunk.length;
        if (length > MAX_BODY) request.destroy(new Error(`the answer is over ${MAX_BODY} bytes`));
        else chunks.push(chunk);
      });
      // A connection cut mid-body fails the response, not always the request.
      response.on('error', (err) => settle(err));
      response.on('end', () => settle(null, { status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks) }));
    });
    request.end(body);
  });
}
