'use strict';

/**
 * The tcp layer: every client connection is paired with one connection to
 * a backend of its route's pool, chosen by the TLS server name, and its
 * bytes pass both ways unread. What each field answers is said in `index.js`.
 */
module.exports = Object.freeze({
  name: 'tcp',
  article: 'a',
  engines: Object.freeze(['tcp']),
  h2Engines: Object.freeze([]),
  alpn: null,
  datagrams: false,
  speaksHttp: false,
  readsRequests: false,
  takesRouteOptions: false,
  routesByPath: false,
  routesByName: true,
  routesBy: 'the TLS server name',
  countsRequests: false,
  counts: 'connections',
  healthRequests: false,
  kind: Object.freeze({ plain: 'tcp', tls: 'tcp+tls' }),
  badge: Object.freeze({ plain: 'tcp', tls: 'tcp · TLS' })
});
