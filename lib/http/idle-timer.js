'use strict';

// Node's own timer of a session or stream (`setTimeout(ms)`), under a symbol of its internals.
let kTimeout = null;

/**
 * Stops the timer `setTimeout(ms)` armed on an http2 session or stream
 * that has closed. Node marks a session (or a stream it destroys) destroyed
 * before its own `setTimeout(0)`, which then returns early: the timer stays
 * armed and holds the session, its socket and its streams until it fires
 * (minutes, for a long `--timeout`), however long ago they closed.
 *
 * @param {import('node:http2').Http2Session | import('node:http2').Http2Stream} h2 closed or destroyed
 */
function clearIdleTimer(h2) {
  if (kTimeout === null) kTimeout = Object.getOwnPropertySymbols(h2).find(isTimeoutSymbol) || null;
  if (kTimeout !== null) clearTimeout(h2[kTimeout]);
}

module.exports = { clearIdleTimer };

function isTimeoutSymbol(symbol) {
  return symbol.description === 'timeout';
}
