'use strict';

const { Duplex } = require('node:stream');

const kFilter = Symbol('kFilter');

/**
 * A response body through the stream a hook's `transformResponse` gave (a
 * Node Transform or any Duplex, or a web TransformStream), as a body
 * filter (lifecycle/observers.js's `BodyFilter`): what the engine writes
 * goes in, what comes out goes to the owner as it comes, with
 * backpressure both ways (`write()` false while the stream's input is
 * full, until `filterDrained()`; `pause()` while the client takes no more).
 */
class TransformFilter {
  /**
   * @param {import('node:stream').Duplex | {readable: object, writable: object}} stream
   * @param {object} owner gets `filterData`, `filterDrained`, `filterEnded`, `filterFailed`
   */
  constructor(stream, owner) {
    this.stream = typeof stream.pipe === 'function' ? stream : Duplex.fromWeb(stream);
    this.owner = owner;
    this.stream[kFilter] = this;
    this.stream.on('data', streamOnData);
    this.stream.on('end', streamOnEnd);
    this.stream.on('drain', streamOnDrain);
    this.stream.on('error', streamOnError);
  }

  /** @returns {boolean} false: stop writing until `filterDrained()` */
  write(data) {
    return this.stream.write(data);
  }

  get full() {
    return this.stream.writableNeedDrain;
  }

  end() {
    this.stream.end();
  }

  pause() {
    this.stream.pause();
  }

  resume() {
    this.stream.resume();
  }

  /** Drops the stream; no callback comes after. */
  destroy() {
    this.owner = null;
    this.stream.destroy();
  }
}

module.exports = { TransformFilter };

function streamOnData(chunk) {
  const owner = this[kFilter].owner;
  if (owner !== null) owner.filterData(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
}

function streamOnEnd() {
  const filter = this[kFilter];
  const owner = filter.owner;
  filter.owner = null;
  if (owner !== null) owner.filterEnded();
}

function streamOnDrain() {
  const owner = this[kFilter].owner;
  if (owner !== null) owner.filterDrained();
}

function streamOnError(err) {
  const filter = this[kFilter];
  const owner = filter.owner;
  filter.owner = null;
  if (owner !== null) owner.filterFailed(err);
}
