'use strict';

const { rateLimitStoreOf } = require('./rate-limit-store');
const Cache = require('../cache/cache');
const Tracer = require('../tracing/tracer');

/**
 * What a process that serves keeps for all its listeners, across reloads:
 * `--rate-limit-store`'s client, `--cache`'s store and `--otlp-endpoint`'s
 * tracer. Each worker has its own; the primary of workers serves nothing, and has none.
 *
 * @param {{rateLimitStore?: Parameters<typeof rateLimitStoreOf>[0], cache?: Parameters<typeof Cache.create>[0],
 *   tracing?: ConstructorParameters<typeof Tracer>[0]}} options the service's
 * @param {boolean} serves this process serves requests (not the primary of workers)
 * @param {import('../ops/logger')} logger
 * @returns {{rateLimits: import('../limits/rate-limit-store') | null, cache: Cache | null, tracer: Tracer | null}}
 */
function servingParts(options, serves, logger) {
  return {
    rateLimits: options.rateLimitStore && serves ? rateLimitStoreOf(options.rateLimitStore, logger) : null,
    cache: serves ? Cache.create(options.cache, logger) : null,
    tracer: options.tracing && serves ? new Tracer(options.tracing, logger) : null
  };
}

module.exports = { servingParts };
