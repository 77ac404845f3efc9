'use strict';

/**
 * A layer: what a listener and its pools speak, declared once. Every part of
 * lila that does one thing for http and another for tcp asks the layer's
 * entry here, by the name of the question, rather than testing its name.
 *
 * @typedef {object} Layer
 * @property {string} name `--layer`'s value
 * @property {'a' | 'an'} article what goes before its name: "an http listener", "a tcp pool"
 * @property {readonly string[]} engines what a listener of it listens with and what its pools
 *   forward with: engines/index.js's engines of these names (an engine's `bind(pool)` is the
 *   connections a pool binding of it holds); the first is the default, `--engine` chooses
 *   between several
 * @property {readonly string[]} h2Engines those of its engines that speak h2, to clients (ALPN,
 *   the preface) and to `h2` servers
 * @property {readonly string[] | null} alpn the protocols its TLS offers clients by ALPN (h2 before
 *   them where h2 is served); null: none offered
 * @property {boolean} datagrams its clients send datagrams (UDP), not connections: its listeners
 *   take no TLS and no PROXY protocol, its pools no `--send-proxy` nor `tls` servers, and a listener
 *   of it may share a port number with one whose clients connect
 * @property {boolean} speaksHttp clients and backends speak HTTP to it: `--acme` obtains
 *   certificates for its HTTPS listeners and answers challenges on its plain ones, a plain one
 *   takes `--redirect-https`, a pool of it can be a `--mirror` pool
 * @property {boolean} readsRequests it reads what a request carries, so that the options which
 *   read it apply: `--sticky` (a cookie), `--max-body-size`, a `--hash-key` or
 *   `--rate-limit-key` other than `ip`
 * @property {boolean} takesRouteOptions route options (`--strip-prefix`, `--match-*`,
 *   `--compress`, `--mirror`, a route line's `--rate-limit`) act on its requests, and the
 *   request lifecycle's features observe them; false: a route only chooses a pool
 * @property {boolean} routesByPath a route matches a host and a path; false: only a name
 * @property {boolean} routesByName a route may name a host (a TLS server name at least); false: its
 *   listeners' one route is `*`
 * @property {string} routesBy what a route of it matches, as messages say it
 * @property {boolean} countsRequests its traffic is counted by request (statuses, 5xx,
 *   durations: /status, metrics, the dashboard); false: by connection (bytes, failures)
 * @property {string} counts what it counts, as messages and the dashboard say it
 * @property {boolean} healthRequests a health check sends a request (`--health-path`); false:
 *   it only connects
 * @property {{plain: string, tls: string}} kind a listener of it as `--check` and the startup
 *   lines name it, without and with TLS
 * @property {{plain: string, tls: string}} badge the same, as the dashboard shows it
 */

/** Every layer, one line each; the first is the default. */
const LAYERS = Object.freeze([
  require('./http'),
  require('./tcp'),
  require('./udp')
]);

const BY_NAME = new Map(LAYERS.map((layer) => [layer.name, layer]));
/** The layers' names, as `--layer` takes them. */
const LAYER_NAMES = Object.freeze(LAYERS.map((layer) => layer.name));
/** The layer of a listener or pool that names none. */
const DEFAULT_LAYER = LAYER_NAMES[0];

/**
 * The layer of that name.
 *
 * @param {string} name
 * @returns {Layer | undefined} undefined for a name that is no layer's (a program's config
 *   object, not checked yet)
 */
function layerOf(name) {
  return BY_NAME.get(name);
}

/**
 * A layer's name with its article, as messages say it: `an http`, `a tcp`.
 *
 * @param {string} name a layer's, or one that is none (`a udp`)
 * @returns {string}
 */
function withArticle(name) {
  const layer = BY_NAME.get(name);
  return `${layer === undefined ? 'a' : layer.article} ${name}`;
}

module.exports = { LAYERS, LAYER_NAMES, DEFAULT_LAYER, layerOf, withArticle };
