'use strict';

const { constants } = require('node:http2');
const { schemeOf } = require('../../net/address');
const { clearIdleTimer } = require('../idle-timer');

// Which deadline `deadline` is, as the fast engine's connections name theirs (one sweep checks both).
const NO_DEADLINE = 0;
const FIRST_STREAM_DEADLINE = 1;
const IDLE_DEADLINE = 2;
const CLOSING_DEADLINE = 3;
// How long a session lila closes may take to end by itself (its GOAWAY sent, the client
// closing) before its connection is closed under it.
const CLOSE_GRACE_MS = 1000;
// A GOAWAY frame (RFC 9113 §6.8) with the last stream id 2^31-1 and NO_ERROR: a shutdown notice.
const SHUTDOWN_NOTICE = Buffer.from([0, 0, 8, 0x07, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
// Rapid reset (CVE-2023-44487, RFC 9113 §10.5): once a session has opened this many
// streams, more than half of them reset by the client before their response ended
// is an attack, not a browser cancelling a few; as Envoy's premature-reset rule.
const RESET_WATCH_FROM = 100;
// A reset this soon after the stream opened is premature.
const PREMATURE_MS = 1000;
const kClientSession = Symbol('kClientSession');

/**
 * One HTTP/2 client connection (its `ServerHttp2Session`), seen as the fast
 * engine sees its connections: in the server's set, with the deadline the
 * server's sweep checks (the first stream within --header-timeout, then the
 * keep-alive timeout while no stream is open, then the grace of a session
 * closing), `idle`, and the drain's GOAWAY. A connection silent for
 * --header-timeout gets a PING, and is closed if it stays silent as long
 * again. It counts the streams the client resets, and sends GOAWAY
 * (ENHANCE_YOUR_CALM) to a client that resets faster than it lets them run.
 *
 * Whenever lila ends a session, it closes the socket under it too if the
 * session has not ended within a second: a TLS connection whose write failed
 * at the wrong moment never completes another (Node's TLS socket keeps the
 * failed write as in progress), and Node's session waits for it forever.
 */
class ClientSession {
  /**
   * @param {import('../exchange/client').FastEngine} engine its listener's
   * @param {import('node:net').Socket} socket the client's connection (TLS or plain)
   * @param {string} clientAddress the client's address, taken when it connected
   * @param {import('node:http2').ServerHttp2Session} session
   */
  constructor(engine, socket, clientAddress, session) {
    this.engine = engine;
    this.socket = socket;
    this.session = session;
    session[kClientSession] = this;
    this.clientAddress = clientAddress;
    this.scheme = schemeOf(socket);
    this.active = 0;
    this.opened = 0;
    this.prematureResets = 0;
    // The rapid-reset guard has acted (once a connection).
    this.calmed = false;
    this.deadline = engine.now() + engine.settings.headerTimeout;
    this.deadlineKind = FIRST_STREAM_DEADLINE;
    // A PING sent for silence, not yet answered.
    this.pinged = false;
    // The shutdown notice (h2c) is sent: the real GOAWAY follows its PING's round trip.
    this.noticed = false;
    // The notice's grace timer, cleared when the session closes first.
    this.noticeTimer = null;
    session.on('error', sessionOnError);
    // No frame either way for so long: the client may be gone without a FIN lila can see
    // (Node stops reading a socket while a write to it is pending), or read nothing.
    session.on('timeout', sessionOnSilence);
    session.setTimeout(engine.settings.headerTimeout);
    session.on('close', sessionOnClose);
    engine.connections.add(this);
    if (engine.settings.draining) this.goAway();
  }

  /**
   * The ClientSession of a core session, if it has one.
   *
   * @param {import('node:http2').ServerHttp2Session | undefined} session
   * @returns {ClientSession | undefined}
   */
  static of(session) {
    return session === undefined ? undefined : session[kClientSession];
  }

  /**
   * Whether a stream that closed before its response ended was reset by
   * the client (RST_STREAM), not closed with its connection.
   *
   * @param {import('node:http2').ServerHttp2Stream} stream closed
   * @returns {boolean}
   */
  resetByClient(stream) {
    // A connection that closes (or a GOAWAY with an error) closes its streams with the session
    // gone; a RST_STREAM closes one stream and leaves the session.
    return stream.rstCode !== undefined && !this.session.destroyed;
  }

  /**
   * Sends the client new SETTINGS (a reload changed the listener's).
   *
   * @param {import('node:http2').Settings} settings
   */
  updateSettings(settings) {
    const session = this.session;
    if (session.closed || session.destroyed) return;
    try {
      session.settings(settings);
    } catch (err) {
      // Too many SETTINGS not acknowledged yet (a client that does not answer): it keeps the ones it has.
      this.engine.logger.debug(`client ${this.clientAddress}: h2: new settings not sent: ${err.message}`);
    }
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
    const now = this.engine.now();
    if (resetEarly && !this.calmed && now - openedAt < PREMATURE_MS && ++this.prematureResets * 2 > this.opened &&
      this.opened >= RESET_WATCH_FROM) {
      this.calmed = true;
      this.engine.logger.warn(`client ${this.clientAddress}: ${this.prematureResets} of ${this.opened} h2 streams reset before their response; ` +
        'GOAWAY (rapid reset)');
      this.closingFrom(now);
      // Not from inside the session's frame processing (a 'stream' event): Node 22 aborts the
      // process when a session destroyed there still has DATA frames of that read to process.
      setImmediate(destroyCalmly, this.session);
      return;
    }
    if (this.active !== 0) return;
    if (this.session.closed) this.closingFrom(now);
    else this.idleUntil(now + this.engine.idleTimeout);
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

  /** The sweep found the deadline passed: no stream came in time, or the session did not end. */
  expired() {
    if (this.deadlineKind === CLOSING_DEADLINE) {
      this.deadlineKind = NO_DEADLINE;
      this.engine.logger.debug(`client ${this.clientAddress}: h2: the session did not end within ${CLOSE_GRACE_MS} ms; connection closed`);
      this.socket.destroy();
      return;
    }
    this.deadlineKind = NO_DEADLINE;
    this.goAway();
  }

  /**
   * GOAWAY: no new stream; those open finish, then the connection closes.
   * On a plain (h2c) connection it takes two steps, as RFC 9113 §6.8
   * suggests: first a GOAWAY whose last stream id is 2^31-1 (no new
   * stream, please: every one the client has sent is still served), then,
   * once PINGs have made two round trips (every stream the client sent before
   * it saw the first is in), the real one, naming the last stream processed
   * — so no stream is refused. Over TLS, Node's session owns the socket and
   * no frame can go between its own: the one GOAWAY goes at once, and a
   * stream the client sent meanwhile gets REFUSED_STREAM (never processed,
   * safe to retry, RFC 9113 §8.7). A session with streams open is asked for
   * a PING: one that cannot answer within a second (see the class) is closed
   * then, not at the end of a drain.
   */
  goAway() {
    const session = this.session;
    if (session.closed || session.destroyed || this.noticed) return;
    if (this.socket.encrypted !== true && !this.socket.destroyed) {
      this.noticed = true;
      // Written between the session's own frames: each of its writes holds whole frames.
      this.socket.write(SHUTDOWN_NOTICE);
      // A client that does not answer the PING within a second is gone: closed then (silent()).
      this.pinged = true;
      // Two round trips: a client answers a PING before the streams it had queued when the
      // notice came (nghttp2 sends PING ACKs first), and those follow the first answer.
      session.ping(() => {
        if (session.destroyed) return;
        session.ping(() => {
          this.pinged = false;
          this.close();
        });
      });
      session.setTimeout(CLOSE_GRACE_MS);
      // A client that keeps sending frames is never silent: if it answers no PING, the real
      // GOAWAY goes after the grace all the same (its PING still counted as unanswered).
      this.noticeTimer = setTimeout(noticeExpired, CLOSE_GRACE_MS, this);
      this.noticeTimer.unref();
      return;
    }
    this.close();
  }

  // The (real) GOAWAY: streams open finish, new ones are refused.
  close() {
    const session = this.session;
    if (session.closed || session.destroyed) return;
    if (this.active === 0) {
      session.close();
      this.closingFrom(this.engine.now());
      return;
    }
    // Before close(): Node sends no PING on a closed session.
    if (!this.pinged) this.ping(CLOSE_GRACE_MS);
    session.close();
  }

  // lila ends the session now: it has CLOSE_GRACE_MS to end by itself.
  closingFrom(now) {
    this.deadline = now + CLOSE_GRACE_MS;
    this.deadlineKind = CLOSING_DEADLINE;
  }

  /** No frame for as long as Node's timer was set: a PING, or, when one is unanswered already, the end. */
  silent() {
    if (this.session.destroyed) return;
    if (this.pinged) {
      this.engine.logger.debug(`client ${this.clientAddress}: h2: a PING unanswered; connection closed`);
      this.socket.destroy();
      return;
    }
    this.ping(this.engine.settings.headerTimeout);
  }

  // Sends a PING; Node's timer, armed again, fires if no frame comes within `ms`.
  ping(ms) {
    const session = this.session;
    this.pinged = true;
    session.ping((err) => {
      if (err || session.destroyed) return;
      this.pinged = false;
      session.setTimeout(this.engine.settings.headerTimeout);
    });
    session.setTimeout(ms);
  }
}

module.exports = ClientSession;

function sessionOnError(err) {
  const clientSession = this[kClientSession];
  clientSession.engine.logger.debug(`client ${clientSession.clientAddress}: h2: ${err.message}`);
}

function sessionOnSilence() {
  this[kClientSession].silent();
}

// Everything the session holds is let go: its timer above all.
function sessionOnClose() {
  clearIdleTimer(this);
  const clientSession = this[kClientSession];
  if (clientSession.noticeTimer !== null) clearTimeout(clientSession.noticeTimer);
  clientSession.engine.connections.delete(clientSession);
}

function noticeExpired(clientSession) {
  clientSession.noticeTimer = null;
  if (!clientSession.pinged) return;
  clientSession.engine.logger.debug(`client ${clientSession.clientAddress}: h2: the shutdown notice's PING unanswered; GOAWAY`);
  clientSession.close();
}

function destroyCalmly(session) {
  if (!session.destroyed) session.destroy(constants.NGHTTP2_ENHANCE_YOUR_CALM);
}
