'use strict';

const { RedisClient } = require('../store/redis-client');
const RateLimitStore = require('../limits/rate-limit-store');

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
    }
  });
  store = new RateLimitStore({ client, timeout: settings.timeout, syncMs: settings.syncMs, logger, url: redis.text });
  client.connect();
  return store;
}

module.exports = { rateLimitStoreOf };
