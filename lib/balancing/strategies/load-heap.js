'use strict';

const eligible = require('./eligible');

/**
 * A binary min-heap of backends ordered by active per unit of weight, then by
 * when each was last picked, repositioned whenever one of them changes (as
 * HAProxy's leastconn repositions a server in its tree on every connection
 * taken or dropped). The least loaded backend is at the top: O(1) to read,
 * O(log n) to keep in order.
 */
class LoadHeap {
  /**
   * @param {import('./member').Member[]} members backends with weight > 0
   */
  constructor(members) {
    const n = members.length;
    this.members = members;
    this.ids = new Map(members.map((backend, id) => [backend, id]));
    this.heap = new Int32Array(n);
    this.position = new Int32Array(n);
    // Never picked yet: earlier in the given order goes first on a tie.
    this.stamp = new Float64Array(n).map((_, id) => id - n);
    this.clock = 0;
    for (let id = 0; id < n; id++) {
      this.heap[id] = id;
      this.position[id] = id;
    }
    for (let slot = (n >> 1) - 1; slot >= 0; slot--) this.down(slot);
  }

  /**
   * The least loaded backend that may be picked; on a tie, the one picked
   * longest ago. Marks it picked.
   *
   * @param {import('./member').PickContext} [ctx]
   * @returns {import('./member').Member | null}
   */
  take(ctx) {
    if (this.heap.length === 0) return null;
    const slot = eligible(this.members[this.heap[0]], ctx) ? 0 : this.firstEligibleSlot(ctx);
    if (slot === -1) return null;
    const id = this.heap[slot];
    this.stamp[id] = ++this.clock;
    this.down(slot);
    return this.members[id];
  }

  /**
   * Puts a backend back in order after its active count changed.
   *
   * @param {import('./member').Member} backend
   */
  reposition(backend) {
    const id = this.ids.get(backend);
    if (id === undefined) return;
    this.down(this.up(this.position[id]));
  }

  // Visits slots in heap order (a frontier of candidate slots) until one may
  // be picked: only when the top was tried already, so the frontier stays small.
  firstEligibleSlot(ctx) {
    const frontier = [0];
    while (frontier.length > 0) {
      let best = 0;
      for (let i = 1; i < frontier.length; i++) if (this.less(frontier[i], frontier[best])) best = i;
      const slot = frontier[best];
      frontier[best] = frontier[frontier.length - 1];
      frontier.pop();
      if (eligible(this.members[this.heap[slot]], ctx)) return slot;
      for (const child of [2 * slot + 1, 2 * slot + 2]) if (child < this.heap.length) frontier.push(child);
    }
    return -1;
  }

  less(slotA, slotB) {
    const a = this.heap[slotA];
    const b = this.heap[slotB];
    const x = this.members[a].active * this.members[b].effectiveWeight;
    const y = this.members[b].active * this.members[a].effectiveWeight;
    return x < y || (x === y && this.stamp[a] < this.stamp[b]);
  }

  up(slot) {
    while (slot > 0) {
      const parent = (slot - 1) >> 1;
      if (!this.less(slot, parent)) break;
      this.swap(slot, parent);
      slot = parent;
    }
    return slot;
  }

  down(slot) {
    const n = this.heap.length;
    for (;;) {
      const left = 2 * slot + 1;
      if (left >= n) return;
      const child = left + 1 < n && this.less(left + 1, left) ? left + 1 : left;
      if (!this.less(child, slot)) return;
      this.swap(slot, child);
      slot = child;
    }
  }

  swap(i, j) {
    const a = this.heap[i];
    const b = this.heap[j];
    this.heap[i] = b;
    this.heap[j] = a;
    this.position[b] = i;
    this.position[a] = j;
  }
}

module.exports = LoadHeap;
