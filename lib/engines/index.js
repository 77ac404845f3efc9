'use strict';

const FastEngine = require('./fast');
const NodeEngine = require('./node');
const TcpEngine = require('./tcp');
const PoolBinding = require('./pool-binding');
const { validateChoice } = require('../config/validate');
const { HTTP_ENGINES } = require('../config/defaults');

/**
 * The engine of a listener: what serves its connections. Every engine has
 * the same face, which is all a listener knows of it:
 * - `server`: the `net.Server` (a `tls.Server`, an `http.Server`) the listener listens with;
 * - `bind(pool)`: a `PoolBinding`, what its requests use of that pool (the listener's routes
 *   hold one per pool they send to);
 * - `useRoutes(routes)`: routes what arrives from then on;
 * - `settingsChanged()`: the listener's settings changed in place (a reload);
 * - `closeIdle()`, `closeGracefully(ms, done)`: for a close and a drain.
 * Its connections and requests read the listener's settings, logger,
 * traffic counters and routes through the engine.
 *
 * @param {import('../listener/listener')} listener its `layer` and `engineName` choose
 * @returns {FastEngine | NodeEngine | TcpEngine}
 * @throws {import('../errors').LilaError} `LILA_ERR_INVALID_OPTION` for an unknown engine
 */
function createEngine(listener) {
  if (listener.layer === 'tcp') return new TcpEngine(listener);
  return validateChoice(listener.engineName, HTTP_ENGINES, 'engine') === 'fast' ? new FastEngine(listener) : new NodeEngine(listener);
}

module.exports = { createEngine, PoolBinding };
