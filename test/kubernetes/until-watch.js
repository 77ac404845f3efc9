'use strict';

// A wait on lib/kubernetes/resource-watch.js's events, for test/kube-client.test.js and
// test/kubernetes/client.k8s.js.

/**
 * Resolves once `predicate` holds, checked at each event of the watch (change, lost, back);
 * rejects after `ms` with the watch's state and last error.
 *
 * @param {import('node:events').EventEmitter & {state: string, lastError: Error | null}} watch a ResourceWatch
 * @param {() => boolean} predicate
 * @param {string} what for the message
 * @param {number} [ms]
 * @returns {Promise<void>}
 */
function untilWatch(watch, predicate, what, ms = 20000) {
  return new Promise((resolve, reject) => {
    const events = ['change', 'lost', 'back'];
    const done = () => {
      clearTimeout(timer);
      for (const event of events) watch.off(event, check);
    };
    const check = () => {
      if (!predicate()) return;
      done();
      resolve();
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`timed out waiting until ${what} (state ${watch.state}, last error: ${watch.lastError && watch.lastError.message})`));
    }, ms);
    for (const event of events) watch.on(event, check);
    check();
  });
}

module.exports = { untilWatch };
