'use strict';

/**
 * The udp layer: a client's address and port make a flow, whose datagrams
 * all go to one backend of its route's pool over one upstream socket, and
 * whose replies go back from the listener's own socket. What each field
 * answers is said in `index.js`.
 */
module.exports = Object.freeze({
  name: 'udp',
  article: 'a',
  engines: Object.freeze(['udp']),
  h2Engines: Object.freeze([]),
  alpn: null,
  datagrams: true,
  speaksHttp: false,
  readsRequests: false,
  takesRouteOptions: false,
  routesByPath: false,
  routesByName: false,
  routesBy: 'nothing: its one route is *',
  countsRequests: false,
  counts: 'flows',
  healthRequests: false,
  kind: Object.freeze({ plain: 'udp', tls: 'udp' }),
  badge: Object.freeze({ plain: 'udp', tls: 'udp' })
});
