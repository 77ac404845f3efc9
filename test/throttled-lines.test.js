'use strict';

const assert = require('node:assert/strict');
const { PassThrough } = require('node:stream');
const Logger = require('../lib/ops/logger');
const ThrottledLines = require('../lib/ops/throttled-lines');

describe('ThrottledLines', () => {
  // A logger whose lines are kept, and the throttle over it.
  function throttled(period) {
    const stream = new PassThrough();
    let text = '';
    stream.on('data', (chunk) => { text += chunk; });
    const lines = new ThrottledLines(new Logger({ stream }), period);
    return { lines, said: () => text.split('\n').filter((line) => line !== '') };
  }

  // Resolves once `said()` has n lines.
  async function until(said, n) {
    while (said().length < n) await new Promise((resolve) => setImmediate(resolve));
  }

  it('writes the first line of a kind at once, and holds the others of its period', () => {
    const { lines, said } = throttled(60000);

    lines.write('info', 'a', 'a 1');
    lines.write('info', 'a', 'a 2');
    lines.write('warn', 'b', 'b 1');

    assert.deepEqual(said(), ['lila: a 1', 'lila: warn: b 1']);
    lines.close();
  });

  it('writes the last line held when the period ends, with how many more there were; a line after a quiet period at once', async () => {
    const { lines, said } = throttled(50);

    lines.write('info', 'a', 'a 1');
    for (let i = 2; i <= 4; i++) lines.write('info', 'a', `a ${i}`);
    await until(said, 2);
    // A new period began with that line: held again, and said at its end, alone.
    lines.write('info', 'a', 'a 5');
    await until(said, 3);
    // A period without a line ends the kind: the next is written at once.
    await new Promise((resolve) => setTimeout(resolve, 120));
    lines.write('info', 'a', 'a 6');

    assert.deepEqual(said(), ['lila: a 1', 'lila: a 4 (and 2 more like it in the last 50 ms)', 'lila: a 5', 'lila: a 6']);
    lines.close();
  });

  it('writes what it holds when closed, and keeps no timer', () => {
    const { lines, said } = throttled(60000);

    lines.write('info', 'a', 'a 1');
    lines.write('info', 'a', 'a 2');
    lines.write('info', 'a', 'a 3');
    lines.close();

    assert.deepEqual(said(), ['lila: a 1', 'lila: a 3 (and 1 more like it in the last 60 s)']);
    assert.equal(lines.kinds.size, 0);
  });
});
