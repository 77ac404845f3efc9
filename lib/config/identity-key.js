'use strict';

// Values that are not plain data (a strategy class, a Balancer a program gives) by identity.
const ids = new WeakMap();
let nextId = 0;

/**
 * A key that is the same for the same definition however its keys were
 * ordered (a file's, or a program's object): plain objects by their sorted
 * keys; functions and objects that are not plain data (a strategy class, a
 * `Balancer`) by identity, so that two of them never compare equal.
 *
 * @param {unknown} value
 * @returns {string}
 */
function identityKey(value) {
  return JSON.stringify(value, (key, item) => {
    if (typeof item === 'function') return `[function #${idOf(item)}]`;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) return item;
    const prototype = Object.getPrototypeOf(item);
    if (prototype !== Object.prototype && prototype !== null) return `[object #${idOf(item)}]`;
    return Object.fromEntries(Object.keys(item).sort().map((name) => [name, item[name]]));
  });
}

module.exports = { identityKey };

function idOf(value) {
  let id = ids.get(value);
  if (id === undefined) {
    id = ++nextId;
    ids.set(value, id);
  }
  return id;
}
