'use strict';

// Mocha's root hooks (package.json's mocha.require). After the whole run, what is still alive
// in the test process is said on stderr: a test that leaks a socket, a timer or a loop shows
// here, while `exit: true` still ends the run (a leftover once kept a Node 24 run spinning after
// its summary, and was not found again: this line is where to start).
module.exports = {
  mochaHooks: {
    afterAll() {
      const alive = process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap' && kind !== 'PipeWrap');
      if (alive.length === 0) return;
      const counts = {};
      for (const kind of alive) counts[kind] = (counts[kind] || 0) + 1;
      process.stderr.write(`test process: still alive after the run: ${Object.entries(counts).map(([kind, n]) => `${n} ${kind}`).join(', ')}\n`);
    }
  }
};
