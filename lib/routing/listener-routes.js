'use strict';

const { RouteTable } = require('./route-table');
const { WeightedSplit } = require('./weighted-split');
const { parseHashKey, parseHashKeyOn, keyReader } = require('../balancing/strategies/hash-key');
const RouteActions = require('../actions/route-actions');
const MirrorPolicy = require('../http/mirror/policy');
const { Compression } = require('../http/compression/compression');
const StaticFiles = require('../files/static-files');
const RouteCache = require('../cache/route-cache');
const RouteHooks = require('../hooks/route-hooks');
const RouteConditions = require('./route-conditions');
const { featuresOf } = require('../http/lifecycle/observers');
const ChallengeActions = require('../actions/acme-challenge');
const { CALLBACK_PATH, LOGOUT_PATH } = require('../actions/oidc-login');
const { layerOf, withArticle } = require('../layers');
const { LilaError, codes } = require('../errors');

/**
 * One route of a listener: what it matches, and the pool (or the weighted
 * split between pools) it sends to, as the listener's engine binds them.
 */
class Route {
  /**
   * @param {{text: string, host: string | null, path: string | null, pathKind?: 'prefix' | 'exact' | 'regex', hashKey?: string,
   *   targets: {pool: {name: string}, weight: number}[], actions?: object, rateLimiter?: object}} spec `actions`: its route
   *   options, --match-* among them; `rateLimiter`: what its listener made of its --rate-limit
   * @param {(pool: object) => object} bindingOf
   * @param {string} layer its listener's layer's name (layers/): what its routes may do
   */
  constructor(spec, bindingOf, layer) {
    const { takesRouteOptions, routesByName } = layerOf(layer);
    if (!routesByName && (spec.host !== null || spec.path !== null)) {
      throw new LilaError(codes.INVALID_OPTION, `route "${spec.text}": ${withArticle(layer)} listener's datagrams carry no name to route by: its route is *`);
    }
    // --mirror comes as `spec.mirror`, its pools found (service/configuration.js).
    // --rate-limit comes as `spec.rateLimiter`, made by the listener (listener/listener.js).
    const { matchMethod, matchHeader, matchQuery, matchCookie, mirror: _mirror, mirrorBodyLimit: _limit, rateLimit, rateLimitKey: _key,
      rateLimitName: _name, compress, root, index, browse, fallback, precompressed, cache, hook: _hook, hookTimeout, ...actions } = spec.actions || {};
    /** What it asks of a request besides its host and path (--match-*); null: nothing. */
    this.conditions = RouteConditions.from({ matchMethod, matchHeader, matchQuery, matchCookie }, `route "${spec.text}"`);
    /** Its match and conditions as the config file writes them: its name in /status, /metrics and access lines. */
    this.text = this.conditions === null ? spec.text : `${spec.text} ${this.conditions.text}`;
    this.host = spec.host;
    this.path = spec.path;
    /** How its path matches: a prefix, exactly, or a regular expression. */
    this.pathKind = spec.pathKind === undefined ? 'prefix' : spec.pathKind;
    this.targets = spec.targets;
    /** Requests (http) or connections (tcp) it has chosen a pool for. */
    this.requests = 0;
    /** What it does to a request besides choosing its pool (route options); null: nothing. */
    if (this.pathKind !== 'prefix' && actions.stripPrefix === true) {
      throw new LilaError(codes.INVALID_OPTION, `route "${spec.text}": --strip-prefix removes a route's path prefix; an exact path or a regular expression has none: use --rewrite`);
    }
    this.actions = spec.routeActions !== undefined ? spec.routeActions
      : RouteActions.from(actions, this.pathKind === 'prefix' ? spec : { ...spec, path: null });
    if (rateLimit !== undefined && !takesRouteOptions) {
      throw new LilaError(codes.INVALID_OPTION, `route "${spec.text}": --rate-limit on a route counts its http requests; ${withArticle(layer)} listener's goes on its listen line`);
    }
    /** `--rate-limit` of the route line: a limiter of its own, apart from its listener's; null: none. */
    this.rateLimiter = spec.rateLimiter === undefined ? null : spec.rateLimiter;
    if ((this.actions !== null || this.conditions !== null || compress !== undefined) && !takesRouteOptions) {
      throw new LilaError(codes.INVALID_OPTION, `route "${spec.text}": route options such as --strip-prefix or --match-header act on http requests; ${withArticle(layer)} listener's routes only choose a pool`);
    }
    /** `--root`: the files it answers from before its pool (without one: alone); null: none. */
    this.files = StaticFiles.from({ root, index, browse, fallback, precompressed }, `route "${spec.text}"`, spec.targets.length > 0);
    if (this.files !== null && layer === 'tcp') {
      throw new LilaError(codes.INVALID_OPTION, `route "${spec.text}": --root serves files over http; a tcp listener's routes only choose a pool`);
    }
    if (spec.targets.length === 0 && this.files === null && !(this.actions !== null && this.actions.answersAll)) {
      throw new LilaError(codes.INVALID_OPTION, `route "${spec.text}" names no pool`);
    }
    for (const { pool } of spec.targets) {
      if (pool.layer !== layer) {
        throw new LilaError(codes.INVALID_OPTION, `route "${spec.text}" names pool "${pool.name}", a ${pool.layer} pool, on ${withArticle(layer)} listener`);
      }
    }
    // A route that answers every request itself has no pool: its requests take the unrouted binding.
    this.binding = spec.targets.length === 1 ? bindingOf(spec.targets[0].pool) : spec.targets.length === 0 ? bindingOf(null) : null;
    this.split = spec.targets.length <= 1
      ? null
      : new WeightedSplit(spec.targets.map(({ pool, weight }) => ({ value: bindingOf(pool), weight, name: pool.name })));
    const key = spec.hashKey === undefined || spec.hashKey === null ? null : routeKey(spec, layer);
    // A split with a key is consistent per key; without one, in proportion per request.
    this.key = key === null ? null : keyReader(key);
    /** The `--hash-key` a split reads (as given), or null. */
    this.hashKey = key === null ? null : spec.hashKey;
    /** `--mirror`: the pools a copy of its requests goes to, and which requests; null: none. */
    this.mirror = spec.mirror === undefined || spec.mirror === null ? null
      : new MirrorPolicy(spec.mirror, bindingOf, this.key, `route "${spec.text}"`);
    /** `--compress`: which of its responses are compressed, and how; null: none. */
    this.compression = Compression.from(compress, `route "${spec.text}"`);
    /** `--cache`: its answers stored in its lila's cache and answered from it; null: none. */
    this.cache = RouteCache.from(cache, spec.cache === undefined ? null : spec.cache, this.text);
    if (cache === true && layer === 'tcp') {
      throw new LilaError(codes.INVALID_OPTION, `route "${spec.text}": --cache stores http answers; a tcp listener's routes only choose a pool`);
    }
    if (_hook !== undefined && !takesRouteOptions) {
      throw new LilaError(codes.INVALID_OPTION, `route "${spec.text}": --hook runs on http requests; ${withArticle(layer)} listener's routes only choose a pool`);
    }
    /** `--hook` (or the library's hooks): a user's code on its requests and their answers; null: none. */
    this.hooks = takesRouteOptions ? RouteHooks.from(spec.hook, hookTimeout, () => hookBindings(spec.hookPools, bindingOf)) : null;
    /** What observes its requests on their way (--compress, --mirror), in the lifecycle's order; null: nothing. */
    this.features = takesRouteOptions ? featuresOf(this) : null;
  }

  /**
   * The pool a key goes to, whatever the pools' health (the admin API's
   * `/route`): what a request carrying it would be split to. Counts nothing.
   *
   * @param {string} key as the route's `--hash-key` reads it from a request
   * @returns {object | null} the pool; null unless the route splits between pools by key
   */
  poolOf(key) {
    if (this.split === null || this.key === null) return null;
    const name = this.split.nameOf(key);
    return this.targets.find(({ pool }) => pool.name === name).pool;
  }

  /**
   * The binding of the pool this request (or connection) goes to.
   *
   * @param {object | undefined} request what a split's `--hash-key` reads (headers, url)
   * @param {string | undefined} clientAddress
   * @returns {import('../pool-binding')}
   */
  pick(request, clientAddress) {
    this.requests++;
    if (this.split === null) return this.binding;
    return this.split.pick(this.key === null ? undefined : this.key({ request, clientAddress }));
  }
}

/**
 * A listener's routes: the table a request's host and path (a tcp
 * connection's server name) are looked up in, once each.
 */
class ListenerRoutes {
  /**
   * @param {ConstructorParameters<typeof Route>[0][]} specs in the order given
   * @param {(pool: object) => object} bindingOf
   * @param {string} layer its listener's layer's name (layers/)
   * @param {{path: string, httpAnswer: (url: string) => string | null} | null} [challenges] a plain http listener's
   *   ACME HTTP-01 tokens (acme/challenges.js): their path is answered before every route
   */
  constructor(specs, bindingOf, layer, challenges = null) {
    this.list = specs.map((spec) => new Route(spec, bindingOf, layer));
    this.table = new RouteTable(this.list);
    this.challenge = challenges === null || !layerOf(layer).speaksHttp ? null : new Route({
      text: 'acme-challenge', host: null, path: challenges.path, targets: [], routeActions: new ChallengeActions(challenges)
    }, bindingOf, layer);
    /** By host, the route with --oidc-* that answers its /oauth2/callback and /oauth2/logout; null: no such route. */
    this.logins = loginOwners(this.list);
    // Whether a route names a host: a tcp listener without TLS then reads the ClientHello.
    this.named = this.list.some((route) => route.host !== null);
  }

  /**
   * @param {string | undefined} host as received (any case, maybe a port)
   * @param {string} url the request target (its query is not matched)
   * @param {object} [request] what routes' conditions read (method, url, headers)
   * @returns {Route | null}
   */
  match(host, url, request) {
    if (this.challenge !== null && url.startsWith(this.challenge.path)) return this.challenge;
    if (this.logins !== null && url.startsWith('/oauth2/') && isLoginPath(url)) {
      const owner = this.logins.match(host, url).owner;
      if (owner !== null) return owner;
    }
    return this.table.match(host, url, request);
  }
}

module.exports = ListenerRoutes;
module.exports.Route = Route;

// A route's --hash-key; one the layer cannot read is named with the route.
function routeKey(spec, layer) {
  parseHashKey(spec.hashKey);
  try {
    return parseHashKeyOn(spec.hashKey, layerOf(layer));
  } catch (err) {
    if (err instanceof LilaError) err.message = `route "${spec.text}": ${err.message}`;
    throw err;
  }
}

// A route with --oidc-* owns its hosts' /oauth2/callback and /oauth2/logout, whatever its path (/app): the provider
// sends browsers back to one URL per host. Hosts are chosen as the route table chooses them (exact, *.suffix, any),
// so a host whose routes have no login keeps those paths for its own routes. A host's first route with a login owns
// them; another with another provider or client could not end its logins there.
function loginOwners(routes) {
  if (!routes.some((route) => loginOf(route) !== null)) return null;
  const owners = new Map();
  for (const route of routes) {
    const key = route.host === null ? '*' : route.host.toLowerCase();
    const login = loginOf(route);
    const owner = owners.get(key);
    if (owner === undefined || (owner.owner === null && login !== null)) {
      owners.set(key, { host: route.host, path: null, owner: login === null ? null : route });
    } else if (login !== null && owner.owner !== null) {
      const first = owner.owner.actions.login;
      if (first.issuer !== login.issuer || first.clientId !== login.clientId) {
        throw new LilaError(codes.INVALID_OPTION, `route "${route.text}": its --oidc-issuer and --oidc-client-id differ from route ` +
          `"${owner.owner.text}"'s on the same host: a host has one ${CALLBACK_PATH}, for one provider and client`);
      }
    }
  }
  return new RouteTable([...owners.values()]);
}

function loginOf(route) {
  return route.actions === null || route.actions.login === undefined ? null : route.actions.login;
}

function isLoginPath(url) {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path === CALLBACK_PATH || path === LOGOUT_PATH;
}

// The pools a hook's `ctx.pool` may name (the config's http pools), bound on the route's listener.
function hookBindings(pools, bindingOf) {
  const bindings = new Map();
  for (const pool of pools || []) bindings.set(pool.name, bindingOf(pool));
  return bindings;
}
