'use strict';

const { OPTIONS } = require('../config/options');
const { LilaError, codes } = require('../errors');

/**
 * --acme and the options that go with it, as `createService({acme})` takes them.
 *
 * @param {Record<string, any>} options the global options read
 * @param {NodeJS.ProcessEnv} [env] for LILA_ACME_DNS_TSIG
 * @returns {object | undefined} undefined without --acme
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for an --acme-* option without --acme, or a --acme-dns-* one without --acme-dns
 */
function acmeOf(options, env = {}) {
  const given = Object.keys(options).filter((name) => name.startsWith('acme-') || (name === 'state-dir' && options.store === undefined && options.kubernetes !== true));
  if (options.acme === undefined) {
    if (given.length > 0) throw new LilaError(codes.INVALID_OPTION, `"--${given[0]}" goes with --acme EMAIL${given[0] === 'state-dir' ? ', --store URL or --kubernetes' : ''}`);
    return undefined;
  }
  return {
    email: options.acme,
    directoryUrl: options['acme-directory'],
    caFile: options['acme-ca'],
    eab: options['acme-eab'],
    challenges: options['acme-challenges'],
    httpPort: options['acme-http-port'],
    maxConcurrency: options['acme-max-concurrency'],
    stateDir: options['state-dir'],
    dns: acmeDnsOf(options, env)
  };
}

module.exports = { acmeOf };

// --acme-dns and its options (the TSIG key also from LILA_ACME_DNS_TSIG); undefined without it.
function acmeDnsOf(options, env) {
  const target = options['acme-dns'];
  const challenges = options['acme-challenges'];
  if (target === undefined) {
    const given = Object.keys(options).find((name) => name.startsWith('acme-dns-'));
    if (given !== undefined) throw new LilaError(codes.INVALID_OPTION, `"--${given}" goes with --acme-dns`);
    if (challenges !== undefined && challenges.includes('dns-01')) {
      throw new LilaError(codes.INVALID_OPTION, '"--acme-challenges dns-01" needs --acme-dns rfc2136://HOST:PORT or exec:FILE');
    }
    return undefined;
  }
  let tsig = options['acme-dns-tsig'];
  if (tsig === undefined && typeof env.LILA_ACME_DNS_TSIG === 'string' && env.LILA_ACME_DNS_TSIG !== '') {
    tsig = OPTIONS.find((option) => option.name === 'acme-dns-tsig').read(env.LILA_ACME_DNS_TSIG, 'LILA_ACME_DNS_TSIG');
  }
  if (tsig !== undefined && target.kind !== 'rfc2136') throw new LilaError(codes.INVALID_OPTION, '"--acme-dns-tsig" goes with --acme-dns rfc2136://HOST:PORT');
  return {
    target,
    tsig: tsig || null,
    resolvers: options['acme-dns-resolvers'],
    nameserverPort: options['acme-dns-nameserver-port'],
    propagationTimeout: options['acme-dns-propagation-timeout']
  };
}
