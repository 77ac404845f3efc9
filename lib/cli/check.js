'use strict';

const Configuration = require('../service/configuration');
const AcmeRunner = require('../acme/runner');
const { summary } = require('../config/config-file');

/**
 * `lila --check`: everything a start would build (pools, certificates,
 * routes), built and dropped, and the hook modules routes name, loaded.
 * A hook that does not load is no mistake of the command line: exit 1, as
 * lila's start would; a mistake of the config throws, as parsing does.
 *
 * @param {{config: object, acme?: object, configFile: string}} service the service's options, as parsed
 * @param {import('../ops/logger')} logger
 * @param {{stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream}} io
 * @returns {Promise<number>} the exit code
 */
async function runCheck(service, logger, { stdout, stderr }) {
  const plan = checkConfig(service.config, logger, service.acme);
  const failed = await plan.configuration.hooks.load(plan.hooks).then(() => null, (err) => err);
  if (failed !== null) {
    stderr.write(`lila: ${failed.message}\n`);
    return 1;
  }
  stdout.write(summary(service.config).map((line) => `${line}\n`).join('') + `lila: ${service.configFile}: good\n`);
  return 0;
}

/**
 * Builds and drops what a config would run (`lila push` checks what it writes with it).
 *
 * @param {object} model
 * @param {import('../ops/logger')} logger
 * @param {object} [acme] --acme's options: listeners are checked as they would serve (port 443 and --tls: HTTPS)
 * @returns {object} the plan, its pools closed, with its `configuration`
 */
function checkConfig(model, logger, acme) {
  const shared = acme === undefined ? null : new AcmeRunner(acme, { logger }).shared;
  const configuration = new Configuration({ logger, drainTimeout: 0, acme: shared });
  // Said once it builds, as a start says them: an option a layer refuses is refused, not also ignored.
  const plan = configuration.prepare(model);
  for (const warning of model.warnings) logger.warn(warning);
  for (const pool of plan.made) pool.close();
  return Object.assign(plan, { configuration });
}

module.exports = { runCheck, checkConfig };
