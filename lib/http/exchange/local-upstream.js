'use strict';

const { STREAM } = require('./framing');
const { LilaError, codes, describeError } = require('../../errors');

const kRelay = Symbol('kRelay');

/**
 * A local answer (../lifecycle/local-response.js) in the place of a fast
 * exchange's upstream: its head goes to `respond` as a backend's does, its
 * body's pieces to the relay with backpressure (the relay pauses and
 * resumes it as it pauses an upstream socket), and it is destroyed with the
 * response. A body that fails or ends short cuts the response (the file
 * changed or went away under it), blaming no backend. A body held whole (a
 * Buffer: a short file) goes to the relay at once after the head
 * (`start()`), not through the answer's stream: a stream's ticks and events
 * cost a short file's answer as much as reading it.
 */
class LocalUpstream {
  /**
   * @param {import('../lifecycle/local-response')} local
   * @param {import('./exchange').Exchange} relay
   */
  constructor(local, relay) {
    this.local = true;
    this.response = local;
    this.relay = relay;
    local[kRelay] = this;
    this.whole = local.body === null || Buffer.isBuffer(local.body);
    if (this.whole) return;
    local.on('data', localOnData);
    local.on('end', localOnEnd);
    local.on('error', localOnError);
  }

  /** After the head: a whole body is relayed, and its end told, at once. */
  start() {
    if (!this.whole) return;
    const local = this.response;
    const body = local.body;
    local.body = null;
    if (body !== null && body.length > 0) localOnData.call(local, body);
    localOnEnd.call(local);
  }

  /**
   * The response head `respond` reads: its Content-Length when known (then
   * framed by it), else streamed to its end.
   *
   * @returns {object}
   */
  head() {
    const { statusCode, statusMessage, rawHeaders, length } = this.response;
    return {
      status: statusCode, reason: statusMessage, rawHeaders, contentLength: length, chunked: false, streamed: length < 0,
      closeDelimited: false, ended: false, httpVersionMinor: 1, connectionClose: false, connectionKeepAlive: true
    };
  }

  pause() {
    this.response.pause();
  }

  resume() {
    this.response.resume();
  }

  isPaused() {
    return this.response.isPaused();
  }

  setTimeout() {}

  destroy() {
    this.response.destroy();
  }
}

module.exports = LocalUpstream;

function localOnData(chunk) {
  const upstream = this[kRelay];
  upstream.relay.upstreamBody(upstream, chunk);
}

function localOnEnd() {
  const upstream = this[kRelay];
  const relay = upstream.relay;
  if (upstream !== relay.upstream || relay.done || relay.responseDone) return;
  if (relay.framing === STREAM) relay.upstreamEnded(upstream);
  else relay.fail(new LilaError(codes.RESOURCES, 'the answer ended short', 500), 'a local answer ended before its length');
}

function localOnError(err) {
  const upstream = this[kRelay];
  const relay = upstream.relay;
  if (upstream !== relay.upstream || relay.done) return;
  relay.fail(new LilaError(codes.RESOURCES, 'the answer could not be read', 500), `a local answer failed: ${describeError(err)}`);
}
