'use strict';

// The resources lila reads, as its watches hold them at one moment: each kind a Map of
// 'namespace/name' to the object. A kind whose watch is absent (its CRD not installed) is empty.

const EMPTY = new Map();

class Snapshot {
  /** @param {{[kind: string]: Map<string, object>}} kinds by plural name: 'services', 'httproutes', ... */
  constructor(kinds) {
    this.kinds = kinds;
  }

  /** @returns {object | undefined} */
  get(kind, key) {
    return (this.kinds[kind] || EMPTY).get(key);
  }

  /** @returns {Iterable<object>} */
  values(kind) {
    return (this.kinds[kind] || EMPTY).values();
  }

  /** @returns {object[]} the objects of a kind, oldest first, then by namespace and name (Gateway API's order of precedence) */
  ordered(kind) {
    return [...this.values(kind)].sort(olderFirst);
  }
}

function olderFirst(a, b) {
  const [ta, tb] = [a.metadata.creationTimestamp || '', b.metadata.creationTimestamp || ''];
  if (ta !== tb) return ta < tb ? -1 : 1;
  const [ka, kb] = [`${a.metadata.namespace}/${a.metadata.name}`, `${b.metadata.namespace}/${b.metadata.name}`];
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

module.exports = { Snapshot, olderFirst };
