'use strict';

const FastEngine = require('./fast');
const NodeEngine = require('./node');
const TcpEngine = require('./tcp');
const UdpEngine = require('./udp');
const { validateChoice } = require('../config/validate');
const { layerOf } = require('../layers');

/** Every engine by name, as a layer names those it runs on (layers/). */
const ENGINES = {
  fast: FastEngine,
  node: NodeEngine,
  tcp: TcpEngine,
  udp: UdpEngine
};

/**
 * A listener as its engine reads it (listener/listener.js's `Listener` fits it): which engine
 * it runs, and what its connections and requests read through the engine.
 *
 * @typedef {object} Listener
 * @property {string} layer its layer's name (layers/)
 * @property {string} engineName `--engine`: which of its layer's engines, where it has several
 * @property {object} settings its client-side settings (listener/settings.js), changed in place
 *   by a reload (`settingsChanged()`)
 * @property {import('../ops/logger')} logger
 * @property {import('../ops/traffic')} traffic where its requests and connections are counted
 */

/**
 * The engine of a listener: what serves its connections. Every engine has
 * the same face, which is all a listener knows of it:
 * - `listen(host, port, options)`: a promise of its address; `takeOver(engine, options)`:
 *   listens on the socket another engine listens on, where `handsOver` says it can;
 *   `address()`; `close()`: stops accepting, a promise of every connection's end
 *   (`stream-engine.js` is these for the engines whose clients connect);
 * - `server`: theirs, a `net.Server` (a `tls.Server`, an `http.Server`), on which
 *   listener/client-side.js hooks what stands before the engine on a connection;
 * - `bind(pool)`: a `PoolBinding`, what its requests use of that pool (the listener's routes
 *   hold one per pool they send to);
 * - `useRoutes(routes)`: routes what arrives from then on;
 * - `settingsChanged()`: the listener's settings changed in place (a reload);
 * - `closeIdle()`, `closeGracefully(ms, done)`: for a close and a drain.
 * Its connections and requests read the listener's settings, logger,
 * traffic counters and routes through the engine.
 *
 * @param {Listener} listener its `layer` and `engineName` choose
 * @returns {FastEngine | NodeEngine | TcpEngine | UdpEngine}
 * @throws {import('../errors').LilaError} `LILA_ERR_INVALID_OPTION` for an engine its layer has not
 */
function createEngine(listener) {
  return new ENGINES[engineOf(listener.layer, listener.engineName)](listener);
}

module.exports = { createEngine };

// The engine a listener of a layer runs: the layer's one, or the one --engine chooses among its several.
function engineOf(layer, engine) {
  const { engines } = layerOf(layer);
  return engines.length === 1 ? engines[0] : validateChoice(engine, engines, 'engine');
}
