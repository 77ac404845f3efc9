'use strict';

/**
 * The http layer: lila reads every request, chooses its route by host and
 * path, and sends it to a backend of the route's pool. What each field
 * answers is said in `index.js`.
 */
module.exports = Object.freeze({
  name: 'http',
  article: 'an',
  engines: Object.freeze(['fast', 'node']),
  h2Engines: Object.freeze(['fast']),
  alpn: Object.freeze(['http/1.1']),
  datagrams: false,
  speaksHttp: true,
  readsRequests: true,
  takesRouteOptions: true,
  routesByPath: true,
  routesByName: true,
  routesBy: 'host and path',
  countsRequests: true,
  counts: 'requests',
  healthRequests: true,
  kind: Object.freeze({ plain: 'http', tls: 'https' }),
  badge: Object.freeze({ plain: 'http', tls: 'https' })
});
