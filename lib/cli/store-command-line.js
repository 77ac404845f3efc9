'use strict';

const fs = require('node:fs');
const { isLoopbackEndpoint } = require('../store/store-url');
const { defaultStateDir } = require('../acme/state-store');
const { LilaError, codes } = require('../errors');
const { version } = require('../../package.json');

/**
 * `--store` on the command line: what a `Fleet` is made with (the store, its
 * TLS, where the last configuration applied is kept), checked as a usage
 * error before anything connects.
 *
 * @param {object} options the command line's, read by the option table
 * @param {NodeJS.ProcessEnv} env for LILA_STORE_PASSWORD
 * @returns {ConstructorParameters<typeof import('../fleet/fleet')>[0] & {logger?: undefined}}
 * @throws {LilaError} a usage error
 */
function storeOf(options, env) {
  const store = { ...options.store };
  if (store.user !== null && store.password === null && typeof env.LILA_STORE_PASSWORD === 'string' && env.LILA_STORE_PASSWORD !== '') {
    store.password = env.LILA_STORE_PASSWORD;
  }
  const files = { ca: options['store-ca'], cert: options['store-cert'], key: options['store-key'] };
  if ((files.cert === undefined) !== (files.key === undefined)) {
    throw new LilaError(codes.INVALID_OPTION, `"--store-${files.cert === undefined ? 'key' : 'cert'}" goes with --store-${files.cert === undefined ? 'cert' : 'key'}`);
  }
  const given = Object.entries(files).filter(([, file]) => file !== undefined);
  if (options.store === undefined) {
    const stray = ['store-ca', 'store-cert', 'store-key', 'store-insecure'].find((name) => options[name] !== undefined);
    if (stray !== undefined) throw new LilaError(codes.INVALID_OPTION, `"--${stray}" goes with --store URL`);
    return null;
  }
  const secure = store.scheme === 'etcds' || given.length > 0;
  // A store holds private keys and tokens: in clear only over loopback, unless the user says so.
  if (!secure && options['store-insecure'] !== true && !store.endpoints.every(isLoopbackEndpoint)) {
    throw new LilaError(codes.INVALID_OPTION, `"--store ${store.text}" would send the configuration, its tokens and private keys ` +
      'unencrypted to another machine: use etcds:// (or --store-ca), or give --store-insecure');
  }
  const tls = secure ? Object.fromEntries(given.map(([name, file]) => [name, readPem(file, `--store-${name}`)])) : null;
  return { store, tls, stateDir: options['state-dir'] || defaultStateDir(), version };
}

/**
 * `--rate-limit-store` on the command line (or a config file's global lines): what the service's
 * `RateLimitStore` is made with, checked before anything connects.
 *
 * @param {object} options read by the option table
 * @param {NodeJS.ProcessEnv} env for LILA_RATE_LIMIT_STORE_PASSWORD
 * @returns {{redis: object, tls: {ca?: Buffer} | null, timeout: number, syncMs: number | null} | undefined}
 * @throws {LilaError} a usage error
 */
function rateLimitStoreOf(options, env) {
  const redis = options['rate-limit-store'];
  if (redis === undefined) {
    const stray = ['rate-limit-store-ca', 'rate-limit-store-timeout', 'rate-limit-sync'].find((name) => options[name] !== undefined);
    if (stray !== undefined) throw new LilaError(codes.INVALID_OPTION, `"--${stray}" goes with --rate-limit-store URL`);
    return undefined;
  }
  const password = redis.password === null && typeof env.LILA_RATE_LIMIT_STORE_PASSWORD === 'string' && env.LILA_RATE_LIMIT_STORE_PASSWORD !== ''
    ? env.LILA_RATE_LIMIT_STORE_PASSWORD
    : redis.password;
  if (redis.user !== null && password === null) {
    throw new LilaError(codes.INVALID_OPTION, `"--rate-limit-store ${redis.text}" names user ${redis.user} without a password: ` +
      'give it in the URL (redis://USER:PASSWORD@HOST) or in LILA_RATE_LIMIT_STORE_PASSWORD');
  }
  const ca = options['rate-limit-store-ca'];
  const secure = redis.scheme === 'rediss' || ca !== undefined;
  return {
    redis: { ...redis, password },
    tls: secure ? (ca === undefined ? {} : { ca: readPem(ca, '--rate-limit-store-ca') }) : null,
    timeout: options['rate-limit-store-timeout'] === undefined ? 50 : options['rate-limit-store-timeout'],
    syncMs: options['rate-limit-sync'] === undefined ? null : options['rate-limit-sync']
  };
}

function readPem(file, flag) {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new LilaError(codes.INVALID_OPTION, `"${flag} ${file}": ${err.code === 'ENOENT' ? 'no such file' : err.code || err.message}`);
  }
}

module.exports = { storeOf, rateLimitStoreOf };
