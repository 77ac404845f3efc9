'use strict';

const Fleet = require('../fleet/fleet');
const { KubernetesController } = require('../kubernetes/controller');
const { createService } = require('../service');
const { LilaError } = require('../errors');

// --store, --kubernetes: the configuration to run is the store's (or the last one applied here),
// or the one made of the cluster's resources, read before the service is made of it; nothing
// to run is exit 1, with one line.
async function startFollowing(parsed, { logger, stderr }) {
  const fleet = parsed.fleet === undefined ? undefined : new Fleet({ ...parsed.fleet, logger });
  const kubernetes = parsed.kubernetes === undefined ? undefined : new KubernetesController({ ...parsed.kubernetes, logger });
  let text;
  try {
    ({ text } = await (fleet || kubernetes).bootstrap(parsed.seed));
    const options = parsed.serviceOf(text);
    // --acme's account, certificates, locks and challenges are the fleet's, in the store.
    if (fleet !== undefined && options.acme !== undefined) options.acme = { ...options.acme, store: fleet.acmeStore() };
    return createService({ ...options, fleet, kubernetes, logger });
  } catch (err) {
    await (fleet || kubernetes).close();
    if (!(err instanceof LilaError) || err.isUsageError && text === undefined) throw err;
    // The store's configuration is not the command line's: its mistakes are a runtime failure.
    stderr.write(`lila: ${err.message}\n`);
    return 1;
  }
}

module.exports = { startFollowing };
