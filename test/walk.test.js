'use strict';

// bench/walk.js: the lib/ functions one GET through lila enters, in order, counted by file (issue 46's
// "walk of one GET on the fast engine"), taken from V8's debugger with lila in the bench's own process.

const assert = require('node:assert/strict');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');

const WALK = path.join(__dirname, '..', 'bench', 'walk.js');

describe('bench/walk.js', function () {
  this.timeout(30000);

  it('counts the steps of one GET on the fast engine, by file, as V8 counts their calls', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [WALK, '--json']);
    const walk = JSON.parse(stdout);

    const steps = walk.steps.filter((step) => !step.timer);
    assert.equal(walk.counts.steps, steps.length);
    assert.ok(walk.counts.steps > 20, `${walk.counts.steps} steps`);
    assert.ok(steps.every((step) => step.file.startsWith(`lib${path.sep}`) && step.file.endsWith('.js')));
    // The request is read by the fast engine's connection first, and goes through the exchange.
    assert.equal(steps[0].file, path.join('lib', 'http', 'fast', 'connection.js'));
    const exchange = walk.perFile.find((file) => file.file === path.join('lib', 'http', 'exchange', 'exchange.js'));
    assert.ok(exchange.calls > 0 && exchange.entries > 0 && exchange.returns > 0, JSON.stringify(exchange));
    // The per-file table adds up to the totals; a return is a file entry, a file entry a step.
    const sum = (field) => walk.perFile.reduce((total, file) => total + file[field], 0);
    assert.equal(walk.perFile.length, walk.counts.files);
    assert.equal(sum('calls'), walk.counts.steps);
    assert.equal(sum('entries'), walk.counts.entries);
    assert.equal(sum('returns'), walk.counts.returns);
    assert.ok(walk.counts.returns < walk.counts.entries && walk.counts.entries < walk.counts.steps);
    assert.equal(walk.counts.entries, walk.counts.files + walk.counts.returns);
    // On the connections the warm-up opened; every call V8 counted in the window is a step.
    assert.equal(walk.reused, true);
    assert.deepEqual(walk.unseen, []);
  });
});
