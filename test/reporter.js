'use strict';

// mocha's spec reporter, and at the end of a run the time each test file took (its suites'
// hooks included, as a file's before() starting etcd or a kube-apiserver is part of it): the
// heavy suites, those run against external systems (etcd, Redis, kube-apiserver, Jaeger, BIND), always; the
// others past 30 s. A CI log says so where a run got slower.
const path = require('node:path');
const Mocha = require('mocha');

const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_RUN_END } = Mocha.Runner.constants;
// The suites that run against external systems (CI's Node 24 leg only).
const HEAVY = /^(?:fleet.*|store-(?:etcd|redis|follow)|etcd-harness|rate-limit-(?:store|fleet)|dashboard-fleet|kubernetes|jaeger|acme-dns01|dns-wire)\.test\.js$/;
const SLOW_SECONDS = 30;

class SpecWithTimes extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const times = new Map();
    const started = new Map();
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file !== undefined && suite.parent !== undefined && suite.parent.root) started.set(suite, performance.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const start = started.get(suite);
      if (start === undefined) return;
      started.delete(suite);
      const file = path.basename(suite.file);
      times.set(file, (times.get(file) || 0) + (performance.now() - start) / 1000);
    });
    runner.once(EVENT_RUN_END, () => {
      const shown = [...times].filter(([file, seconds]) => HEAVY.test(file) || seconds >= SLOW_SECONDS).sort((a, b) => b[1] - a[1]);
      if (shown.length === 0) return;
      const heavy = shown.filter(([file]) => HEAVY.test(file)).reduce((sum, [, seconds]) => sum + seconds, 0);
      const lines = shown.map(([file, seconds]) => `  ${seconds.toFixed(1).padStart(7)} s  ${file}${HEAVY.test(file) ? ' (external systems)' : ''}`);
      process.stdout.write(`\n  suite times (the heavy suites, and any past ${SLOW_SECONDS} s; heavy ones ${heavy.toFixed(1)} s in all):\n${lines.join('\n')}\n`);
    });
  }
}

module.exports = SpecWithTimes;
