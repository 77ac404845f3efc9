'use strict';

const CHAR_BRACKET = 0x5b;

/**
 * What route actions read of a request, the same from every engine: the
 * fast engine's request head, core http's IncomingMessage, an h2 stream's
 * head (all have `method`, `url` and `headers` by lower-case name).
 */
class RequestView {
  /**
   * @param {{method: string, url: string, headers: object}} request
   * @param {string | undefined} host the Host (h2: :authority) as received
   * @param {'http' | 'https'} scheme the client's
   * @param {string | undefined} clientAddress after --accept-proxy
   * @param {string | null} requestId --request-id's, or null
   * @param {{subject: string, attributes: string[][], uris: string[], dns: string[]} | null} [clientCert] the
   *   connection's verified client certificate (`net/client-certificate.js`), null without one
   */
  constructor(request, host, scheme, clientAddress, requestId, clientCert = null) {
    this.request = request;
    this.method = request.method;
    this.url = request.url;
    this.host = host === undefined ? '' : host;
    this.scheme = scheme;
    this.clientAddress = clientAddress;
    this.requestId = requestId;
    /** What `--allow-client-cert` reads: the client's verified certificate, or null. */
    this.clientCert = clientCert;
  }

  /** The Host without its port (an IPv6 address keeps its brackets). */
  get hostname() {
    const host = this.host;
    const colon = host.charCodeAt(0) === CHAR_BRACKET ? host.indexOf(':', host.indexOf(']')) : host.indexOf(':');
    return colon === -1 ? host : host.slice(0, colon);
  }

  /**
   * @param {string} name lower case
   * @returns {string | undefined} the field's value, fields of that name joined
   */
  header(name) {
    const value = this.request.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  }
}

module.exports = RequestView;
