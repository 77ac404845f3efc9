'use strict';

/**
 * Two body filters one after the other (observers.js's `BodyFilter`): a
 * hook's transform, then `--compress`'s encoder, which compresses what the
 * transform made. To its owner (the engine's passage) it is one filter:
 * what it writes goes to the inner one, the inner one's output to the
 * outer one, and the outer one's to the owner. Backpressure both ways: the
 * inner filter's output is paused while the outer one is full; the owner's
 * pause (the client takes no more) stops the outer one.
 */
class FilterChain {
  /**
   * @param {object} inner the filter put on first (its owner becomes this chain)
   * @param {object} outer the one put on after it, made with `owner` as its owner (which becomes this chain)
   * @param {object} owner gets `filterData`, `filterDrained`, `filterEnded`, `filterFailed`
   */
  constructor(inner, outer, owner) {
    this.inner = inner;
    this.outer = outer;
    this.owner = owner;
    inner.owner = new InnerOwner(this);
    outer.owner = new OuterOwner(this);
  }

  write(data) {
    return this.inner.write(data);
  }

  get full() {
    return this.inner.full;
  }

  end() {
    this.inner.end();
  }

  pause() {
    this.outer.pause();
  }

  resume() {
    this.outer.resume();
  }

  destroy() {
    this.owner = null;
    this.inner.destroy();
    this.outer.destroy();
  }

  /** One of the two failed: the other goes, the owner is told once. */
  failed(err) {
    const owner = this.owner;
    if (owner === null) return;
    this.destroy();
    owner.filterFailed(err);
  }
}

// What the inner filter gives goes to the outer one; a full outer one pauses its output.
class InnerOwner {
  constructor(chain) {
    this.chain = chain;
  }

  filterData(data) {
    const { chain } = this;
    if (chain.owner !== null && !chain.outer.write(data)) chain.inner.pause();
  }

  filterDrained() {
    if (this.chain.owner !== null) this.chain.owner.filterDrained();
  }

  filterEnded() {
    if (this.chain.owner !== null) this.chain.outer.end();
  }

  filterFailed(err) {
    this.chain.failed(err);
  }
}

// What the outer filter gives goes to the owner; once it has room again, the inner one gives more.
class OuterOwner {
  constructor(chain) {
    this.chain = chain;
  }

  filterData(data) {
    if (this.chain.owner !== null) this.chain.owner.filterData(data);
  }

  filterDrained() {
    if (this.chain.owner !== null) this.chain.inner.resume();
  }

  filterEnded() {
    if (this.chain.owner !== null) this.chain.owner.filterEnded();
  }

  filterFailed(err) {
    this.chain.failed(err);
  }
}

module.exports = { FilterChain };
