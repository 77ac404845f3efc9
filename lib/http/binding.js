'use strict';

const { LilaError, codes } = require('../errors');

// What an exchange reads of a pool when no route matched: it answers 404 before any of it is used.
const NO_POOL_SETTINGS = { stickyCookie: null, hostHeader: 'client', locationRewrite: false, sendProxy: 0 };
const NO_BALANCER = { now: () => performance.now(), release() {} };
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i;

/**
 * What an exchange of a listener uses once its route has chosen a pool: the
 * listener's context (its settings, connections, body watch, h2 side) with
 * the pool's balancer, health, pooled upstream connections and settings
 * towards backends on top. Made once per listener and pool, so that the
 * request path reads `context.balancer` and `context.settings.timeout`
 * exactly as it did when a listener had one pool.
 *
 * @param {object} context the engine's context of the listener
 * @param {object | null} pool a `Pool`; null: the binding of requests no route matches
 * @returns {object}
 */
function bindPool(context, pool) {
  const binding = Object.create(context);
  binding.pool = pool;
  binding.settings = Object.assign(Object.create(context.settings), pool === null ? NO_POOL_SETTINGS : pool.settings);
  if (pool === null) {
    binding.balancer = NO_BALANCER;
    binding.health = null;
    binding.pools = null;
    binding.h2Sessions = null;
    return binding;
  }
  const { pools, h2Sessions } = pool.connections();
  binding.balancer = pool.balancer;
  binding.health = pool.health;
  binding.pools = pools;
  binding.h2Sessions = h2Sessions;
  return binding;
}

/**
 * The context of one request: its route's pool's binding, or the listener's
 * binding for requests no route matches. Sets `route` on the exchange.
 *
 * @param {object} context the listener's
 * @param {{route: object | null}} exchange the pick context (request, clientAddress)
 * @param {string | undefined} host the Host (or :authority) as received
 * @param {string} url the request target, origin-form
 * @returns {object}
 */
function routeRequest(context, exchange, host, url) {
  // A path with dot-segments is routed nowhere (noRoute answers 400): a backend resolving
  // /public/../admin would serve /admin through the route of /public, past its --allow.
  const route = hasDotSegment(url) ? null : context.routes.match(host, url);
  exchange.route = route;
  if (route !== null) return route.pick(exchange);
  context.traffic.noRoute++;
  return context.unrouted;
}

/**
 * The 404 of a request no route matches, naming what it asked for.
 *
 * @param {string | undefined} host
 * @param {string} url
 * @returns {LilaError}
 */
function noRoute(host, url) {
  if (hasDotSegment(url)) return new LilaError(codes.BAD_REQUEST, 'the path holds a "." or ".." segment', 400);
  const query = url.indexOf('?');
  let path = query === -1 ? url : url.slice(0, query);
  // The answer names what was asked, not all of a target as long as --max-header-size.
  if (path.length > 200) path = `${path.slice(0, 200)}...`;
  return new LilaError(codes.NO_ROUTE, `no route for host "${host === undefined ? '' : host}" and path "${path}"`, 404);
}

module.exports = { bindPool, routeRequest, noRoute };

// `/./`, `/../` and their percent-encoded forms (%2e), in the path only; a browser or curl resolves them before sending.
function hasDotSegment(url) {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return (path.includes('.') || path.includes('%')) && DOT_SEGMENT.test(path);
}
