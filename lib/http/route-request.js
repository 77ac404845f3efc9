'use strict';

const { LilaError, codes } = require('../errors');

const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i;

/**
 * A route as the http layer reads it: what a request asks of the route its listener's
 * routes matched (routing/listener-routes.js's `Route` fits it).
 *
 * @typedef {object} Route
 * @property {string} text its match as the config file writes it: its name in access lines and counts
 * @property {import('../actions/route-actions') | null} actions what it does to a request besides
 *   choosing its pool (route options); null: nothing
 * @property {object[] | null} features what observes its requests (--compress, --mirror, --root), in
 *   the lifecycle's order (lifecycle/observers.js); null: nothing
 * @property {object | null} rateLimiter its route line's `--rate-limit`; null: none
 * @property {(request: object | undefined, clientAddress: string | undefined) => import('../pool-binding')} pick
 *   the binding of the pool a request goes to (a split's choice, by its `--hash-key`), counted
 */

/**
 * What every http engine gives its requests (engines/: the fast and the node engine fit it):
 * its listener's settings, logger, counters and routes, and the binding of no pool.
 *
 * @typedef {object} Engine
 * @property {object} settings its listener's client-side settings (listener/settings.js)
 * @property {import('../ops/logger')} logger
 * @property {import('../ops/traffic')} traffic
 * @property {{match: (host: string | undefined, url: string, request?: object) => Route | null}} routes
 *   its listener's, swapped at once on a reload
 * @property {import('../pool-binding')} unrouted the binding of requests that have no pool
 */

/**
 * The route of a request, asked once of its listener's routes, the same on
 * every engine: null when none matches (counted; the request is answered
 * 404 by `noRoute`), or when its path holds a dot segment (400).
 *
 * @param {Engine} engine the listener's engine
 * @param {string | undefined} host the Host (or :authority) as received
 * @param {string} url the request target, origin-form
 * @param {object} request what routes' conditions read: `method`, `url`, `headers`
 * @returns {Route | null}
 */
function routeOf(engine, host, url, request) {
  // A path with dot-segments is routed nowhere (noRoute answers 400): a backend resolving
  // /public/../admin would serve /admin through the route of /public, past its --allow.
  const route = hasDotSegment(url) ? null : engine.routes.match(host, url, request);
  if (route === null) engine.traffic.noRoute++;
  return route;
}

/**
 * The 404 of a request no route matches, naming what it asked for as routes
 * compare it: the host without its port, in lower case, and the path
 * without its query (or the 400 of a path with a dot segment).
 *
 * @param {string | undefined} host the Host (or :authority) as received
 * @param {string} url
 * @returns {LilaError}
 */
function noRoute(host, url) {
  if (hasDotSegment(url)) return new LilaError(codes.BAD_REQUEST, 'the path holds a "." or ".." segment', 400);
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return new LilaError(codes.NO_ROUTE, `no route for host "${shortened(hostName(host))}" and path "${shortened(path)}"`, 404);
}

/**
 * The binding a request goes with: its route's pool's (the split's choice
 * for it, when the route splits), or the engine's binding of no pool.
 *
 * @param {Engine} engine
 * @param {Route | null} route
 * @param {object} request what a split's --hash-key reads (headers, url)
 * @param {string | undefined} clientAddress
 * @returns {import('../pool-binding')}
 */
function bindingFor(engine, route, request, clientAddress) {
  return route === null ? engine.unrouted : route.pick(request, clientAddress);
}

module.exports = { routeOf, bindingFor, noRoute };

// The host as routes compare it (routing/route-table.js's normalizeHost, which this layer
// cannot import): without its port and one trailing dot, in lower case; an IPv6 address keeps
// its brackets.
function hostName(host) {
  if (host === undefined) return '';
  const end = host.startsWith('[') ? host.indexOf(']') + 1 : host.indexOf(':');
  let name = end <= 0 ? host : host.slice(0, end);
  if (name.endsWith('.')) name = name.slice(0, -1);
  return name.toLowerCase();
}

// The answer names what was asked, not all of a target as long as --max-header-size.
function shortened(text) {
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

// `/./`, `/../` and their percent-encoded forms (%2e), in the path only; a browser or curl resolves them before sending.
function hasDotSegment(url) {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return (path.includes('.') || path.includes('%')) && DOT_SEGMENT.test(path);
}
