'use strict';

const { RedisClient } = require('../store/redis-client');
const RateLimitStore = require('../limits/rate-limit-store');

// Each store's first state (up or down) as a promise, for firstContact.
const firstStates = new WeakMap();

/**
 * `--rate-limit-store`: the Redis (or Valkey) every --rate-limit of this
 * process counts in, with every lila naming it. One client a process (each
 * worker has its own, so that the limit holds across workers too); its state
 * said once when lost and once when back.
 *
 * @param {{redis: ReturnType<import('../store/redis-url')['parseRedisUrl']>, tls: {ca?: Buffer} | null,
 *   timeout: number, syncMs: number | null}} settings as the command line reads them
 * @param {import('../ops/logger')} logger
 * @returns {RateLimitStore}
 */
function rateLimitStoreOf(settings, logger) {
  const { redis } = settings;
  let store = null;
  let found;
  const first = new Promise((resolve) => { found = resolve; });
  const client = new RedisClient({
    host: redis.host,
    port: redis.port,
    tls: settings.tls,
    user: redis.user,
    password: redis.password,
    db: redis.db,
    // A command waits no longer than a request would: past the deadline, its answer is of no use.
    timeout: Math.max(1000, settings.timeout * 4),
    logger,
    onState: (up, err) => {
      if (store !== null) store.stateChanged(up, err);
      found();
    }
  });
  store = new RateLimitStore({ client, timeout: settings.timeout, syncMs: settings.syncMs, logger, url: redis.text });
  firstStates.set(store, first);
  client.connect();
  return store;
}

/**
 * Resolves once the store was first found up or down, or at the store's
 * deadline (`--rate-limit-store-timeout`): a lila that starts counts in the
 * store from its first request when the store answers in time, and waits no
 * longer than a request would. Never rejects.
 *
 * @param {RateLimitStore} store made by rateLimitStoreOf
 * @returns {Promise<void>}
 */
function firstContact(store) {
  let timer;
  const deadline = new Promise((resolve) => { timer = setTimeout(resolve, store.timeout); });
  return Promise.race([firstStates.get(store), deadline]).finally(() => clearTimeout(timer));
}

module.exports = { rateLimitStoreOf, firstContact };
