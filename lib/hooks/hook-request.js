'use strict';

const { fieldsObject, fieldChanges } = require('./hook-fields');
const { clientCertificateOf } = require('../net/client-certificate');
const { LilaError, codes } = require('../errors');

const BAD_PATH = /[\s\0]/;

/**
 * The request as `onRequest` reads and changes it (`req`): its method and
 * Host, its target and fields as its backend would get them (the route's
 * edits applied), its client. What is read costs only when read: the
 * fields object is made on the first read of `headers`.
 */
class HookRequest {
  /** @param {import('../http/lifecycle/passage')} passage */
  constructor(passage) {
    this.passage = passage;
    /** @type {string} */
    this.method = passage.request.method;
    /** @type {string | undefined} the Host (or :authority) as received */
    this.host = passage.host;
    this.target = passage.target;
    this.fields = null;
    this.before = null;
  }

  /** @returns {string} path and query, as its backend gets them */
  get path() {
    return this.target;
  }

  set path(value) {
    this.target = value;
  }

  /** @returns {Record<string, string | string[]>} the request's fields as its backend gets them, by lower-case name */
  get headers() {
    if (this.fields === null) {
      this.fields = fieldsObject(this.passage.outgoingHead().headers);
      this.before = { ...this.fields };
    }
    return this.fields;
  }

  set headers(value) {
    if (this.before === null) void this.headers;
    this.fields = value;
  }

  /** @returns {{address: string | undefined, port: number | undefined}} */
  get client() {
    return { address: this.passage.clientAddress, port: this.passage.clientSocket.remotePort };
  }

  /** @returns {{servername: string | null, alpn: string | null, certificate: string | null} | null} null over plain HTTP */
  get tls() {
    const socket = this.passage.clientSocket;
    if (socket.encrypted !== true) return null;
    const certificate = clientCertificateOf(socket);
    return { servername: socket.servername || null, alpn: socket.alpnProtocol || null, certificate: certificate === null ? null : certificate.subject };
  }

  /**
   * What the hook changed, as the lifecycle applies it (`passage.edits`): the target, the fields.
   *
   * @param {import('../http/lifecycle/request-edits').RequestEdits} edits
   * @throws {LilaError} `LILA_ERR_HOOK` for a target or a field lila cannot send
   */
  editsInto(edits) {
    const target = this.target;
    if (target !== this.passage.target) {
      if (typeof target !== 'string' || !target.startsWith('/') || BAD_PATH.test(target)) {
        throw new LilaError(codes.HOOK, `onRequest set the path to ${JSON.stringify(target)}: a path starts with "/" and holds no space, CR, LF or NUL`, 500);
      }
      edits.target = target;
    }
    if (this.fields !== null) edits.fields = fieldChanges(this.before, this.fields, 'onRequest');
  }
}

module.exports = HookRequest;
