'use strict';

/**
 * What runs, as the admin APIs, the metrics and the dashboard read it: what
 * a `view()` gives (service/configuration.js's `Configuration#view` fits
 * it, and so does a `Proxy`'s). Its listeners, pools and counters are the
 * running objects themselves, read as they are now.
 *
 * @typedef {object} RunningView
 * @property {boolean} single a command line's one pool behind one listener, shown as README
 *   documents a command line's
 * @property {object | null} listener the first listener (listener/listener.js's `Listener`)
 * @property {object | null} pool the first listener's first pool, else the first pool (pool.js's `Pool`)
 * @property {{listener: object, address: string, layer: string, tls: boolean, redirect: string | null,
 *   routes: object[]}[]} listeners every listener, with its routes; `redirect`: where its
 *   `--redirect-http` answers, null without one
 * @property {object[]} pools every pool
 * @property {object} traffic the counters every listener adds to (ops/traffic.js's `Traffic`)
 * @property {number} openConnections client connections open, on every listener
 * @property {object | null} [rateLimitStore] where limits are counted with `--rate-limit-store`; null: in memory
 */

module.exports = {};
