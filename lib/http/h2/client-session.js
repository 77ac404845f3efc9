'use strict';

const { constants } = require('node:http2');
const { peerAddressOf, schemeOf } = require('../../net/address');

// Which deadline `deadline` is, as the fast engine's connections name theirs (one sweep checks both).
const NO_DEADLINE = 0;
const FIRST_STREAM_DEADLINE = 1;
const IDLE_DEADLINE = 2;
// Rapid reset (CVE-2023-44487, RFC 9113 §10.5): once a session has opened this many
// streams, more than half of them reset by the client before their response ended
// is an attack, not a browser cancelling a few; as Envoy's premature-reset rule.
const RESET_WATCH_FROM = 100;
// A reset this soon after the stream opened is premature.
const PREMATURE_MS = 1000;

/**
 * One HTTP/2 client connection (its `ServerHttp2Session`), seen as the fast
 * engine sees its connections: in the server's set, with the deadline the
 * server's sweep checks (the first stream within --header-timeout, then the
 * keep-alive timeout while no stream is open), `idle`, and the drain's
 * GOAWAY. It counts the streams the client resets early, and sends GOAWAY
 * (ENHANCE_YOUR_CALM) to a client that resets faster than it lets them run.
 */
class ClientSession {
  /**
   * @param {object} context the fast server's context
   * @param {import('node:net').Socket} socket the client's connection (TLS or plain)
   * @param {import('node:http2').ServerHttp2Session} session
   */
  constructor(context, socket, session) {
    this.context = context;
    this.socket = socket;
    this.session = session;
    this.clientAddress = peerAddressOf(socket);
    this.scheme = schemeOf(socket);
    this.active = 0;
    this.opened = 0;
    this.prematureResets = 0;
    this.deadline = context.now() + context.settings.headerTimeout;
    this.deadlineKind = FIRST_STREAM_DEADLINE;
    session.on('error', (err) => context.logger.debug(`client ${this.clientAddress}: h2: ${err.message}`));
    // No frame either way for twice what a stream may wait without one (the queue, a
    // connect, the backend's silence): every stream on it would have been answered or
    // timed out by then, so the client is gone or reads nothing (its window stays shut,
    // and Node then stops reading the socket, never seeing its FIN): it is closed.
    const { settings, balancer } = context;
    const quiet = 2 * (balancer.queue.timeout + settings.connectTimeout + settings.timeout);
    session.setTimeout(quiet, () => {
      context.logger.debug(`client ${this.clientAddress}: h2: no frame for ${quiet} ms; closed`);
      session.destroy();
    });
    session.on('close', () => context.connections.delete(this));
    context.connections.add(this);
    if (context.settings.draining) this.goAway();
  }

  /** True when no stream is open. */
  get idle() {
    return this.active === 0;
  }

  /** A stream opened. */
  streamOpened() {
    this.active++;
    this.opened++;
    this.deadlineKind = NO_DEADLINE;
  }

  /**
   * A stream closed.
   *
   * @param {number} openedAt when it opened (ms)
   * @param {boolean} resetEarly the client reset it before its response ended
   */
  streamClosed(openedAt, resetEarly) {
    this.active--;
    const now = this.context.now();
    if (resetEarly && now - openedAt < PREMATURE_MS && ++this.prematureResets * 2 > this.opened && this.opened >= RESET_WATCH_FROM) {
      this.context.logger.warn(`client ${this.clientAddress}: ${this.prematureResets} of ${this.opened} h2 streams reset before their response; ` +
        'GOAWAY (rapid reset)');
      this.deadlineKind = NO_DEADLINE;
      // Not from inside the session's frame processing (a 'stream' event): Node 22 aborts the
      // process when a session destroyed there still has DATA frames of that read to process.
      setImmediate(destroyCalmly, this.session);
      return;
    }
    if (this.active === 0 && !this.session.closed) this.idleUntil(now + this.context.idleTimeout);
  }

  /**
   * Closes the session at `deadline` unless a stream opens before.
   *
   * @param {number} deadline ms since the epoch
   */
  idleUntil(deadline) {
    this.deadline = deadline;
    this.deadlineKind = IDLE_DEADLINE;
  }

  /** The sweep found the deadline passed: no stream came in time. */
  expired() {
    this.deadlineKind = NO_DEADLINE;
    this.goAway();
  }

  /** GOAWAY: no new stream; those open finish, then the connection closes. */
  goAway() {
    if (!this.session.closed && !this.session.destroyed) this.session.close();
  }
}

module.exports = ClientSession;

function destroyCalmly(session) {
  if (!session.destroyed) session.destroy(constants.NGHTTP2_ENHANCE_YOUR_CALM);
}
