'use strict';

const { now } = require('./words');

// Status conditions as Gateway API and Kubernetes write them: a condition that did not change
// keeps its lastTransitionTime, so that status changes only when something did.

/**
 * @param {string} type
 * @param {boolean} status
 * @param {string} reason
 * @param {string} message
 * @param {number} [generation] the object's metadata.generation the condition is about
 */
function condition(type, status, reason, message, generation) {
  return { type, status: status ? 'True' : 'False', reason, message, observedGeneration: generation, lastTransitionTime: '' };
}

/**
 * The conditions to write: each one's lastTransitionTime the old one's when its status is the
 * same, else now.
 *
 * @param {object[]} next
 * @param {object[] | undefined} previous
 */
function dated(next, previous = []) {
  const time = now();
  return next.map((item) => {
    const old = previous.find((candidate) => candidate.type === item.type);
    const lastTransitionTime = old !== undefined && old.status === item.status && old.lastTransitionTime ? old.lastTransitionTime : time;
    return { ...item, lastTransitionTime };
  });
}

/** Whether two statuses say the same, lastTransitionTime aside. */
function sameStatus(a, b) {
  return JSON.stringify(a, withoutTimes) === JSON.stringify(b, withoutTimes);
}

function withoutTimes(key, value) {
  return key === 'lastTransitionTime' ? undefined : value;
}

module.exports = { condition, dated, sameStatus };
