'use strict';

// Root hooks of the Kubernetes suites' mocha (test/kubernetes.test.js requires this file before
// test/root-hooks.js): the cluster the suites share (useCluster, test/kubernetes.js) is stopped
// once they have all run, before root-hooks.js says what is still alive.
const { stopSharedCluster } = require('../kubernetes');

module.exports = {
  mochaHooks: {
    async afterAll() {
      this.timeout(60000);
      await stopSharedCluster();
      // A child's handle is let go at the end of a turn of the loop after its end: two turns.
      for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    }
  }
};
