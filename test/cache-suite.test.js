'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { cleanup, onCleanup, startLila } = require('./helpers');
const suite = require('./http-cache-tests');

// lila's options besides `round-robin <origin> -a 127.0.0.1 -p 0`: where `--cache` goes.
const LILA_OPTIONS = ['--cache'];
// The fewest tests of each kind lila must pass (a result of `true`, see tally() in
// ./http-cache-tests.js), as README's "Reliability" states them: one under what lila passes
// (153 and 87), for a test whose timing a loaded machine upsets; doc/cache.md lists the others
// and why. `check` tests say what a cache does, not whether it is right, and have no floor.
const FLOOR = { required: 152, optimal: 86 };
const README = path.join(__dirname, '..', 'README.md');

describe(`the HTTP working group's cache tests (http-cache-tests ${suite.VERSION}) through lila`, function () {
  // About 20 s: the client runs its 350 tests 100 at a time, each hundred as long as its slowest
  // (3 s of waiting for an answer to go stale; 9 s for one whose answer ends when the origin
  // closes the connection).
  this.timeout(120000);
  let counts;

  before(async function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-cache-suite-'));
    // Kept once it holds the results, for whoever works on the cache: what failed, and why.
    let keep = false;
    onCleanup(() => fs.rmSync(keep ? path.join(dir, 'origin.pid') : dir, { recursive: true, force: true }));
    const origin = await suite.startOrigin(dir);
    onCleanup(() => origin.stop());
    const lila = await startLila(['round-robin', `127.0.0.1:${origin.port}`, '-a', '127.0.0.1', '-p', '0', ...LILA_OPTIONS]);
    const client = new AbortController();
    onCleanup(() => client.abort());
    const started = performance.now();
    const results = await suite.runClient(`http://127.0.0.1:${lila.port}`, { signal: client.signal });
    const seconds = (performance.now() - started) / 1000;
    const tests = await suite.listTests();
    const tally = suite.tally(tests, results);
    counts = tally.counts;
    const failures = path.join(dir, 'failing.tsv');
    fs.writeFileSync(path.join(dir, 'results.json'), JSON.stringify(results, null, 2));
    const failing = suite.writeFailures(failures, tests, results, tally.verdicts);
    keep = true;
    console.log(`      cache tests ${suite.VERSION}: ${suite.describeCounts(counts)}; ${seconds.toFixed(1)} s; ` +
      `${failing} not passed, listed in ${failures}`);
    const unrun = tests.filter((test) => !test.browserOnly && results[test.id] === undefined);
    assert.deepEqual(unrun.map((test) => test.id), [], 'tests the client ran but reported no result for');
  });
  after(cleanup);

  for (const kind of Object.keys(FLOOR)) {
    it(`passes at least ${FLOOR[kind]} ${kind} test${FLOOR[kind] === 1 ? '' : 's'}`, () => {
      assert.ok(counts[kind].passed >= FLOOR[kind],
        `${counts[kind].passed} of ${counts[kind].total} ${kind} tests passed, fewer than ${FLOOR[kind]}`);
    });
  }

  it('has its floor stated in README', () => {
    const stated = `at least ${FLOOR.required} of its ${counts.required.total} required tests and ${FLOOR.optimal} of its ` +
      `${counts.optimal.total} optimal ones`;
    assert.ok(fs.readFileSync(README, 'utf8').replace(/\s+/g, ' ').includes(stated), `README does not say "${stated}"`);
  });
});
