'use strict';

const { parseArgs } = require('node:util');
const { OPTIONS, parseArgsOptions, readOptions, argumentProblem, LONG_NAMES } = require('../config/options');
const { readConfigFile, summary } = require('../config/config-file');
const { storeOf } = require('./store-command-line');
const { pushHelpText } = require('./help');
const EtcdClient = require('../store/etcd-client');
const { LilaError, codes } = require('../errors');

// What `lila push` takes besides the file: the store and how to reach it.
const PUSH_OPTIONS = new Set(['store', 'store-ca', 'store-cert', 'store-key', 'store-insecure', 'if-revision', 'state-dir']);
const USAGE = 'usage: lila push FILE --store URL [--if-revision N]; "lila push --help" tells all';

/**
 * `lila push FILE --store URL`: checks a config file whole, as `--check`
 * does, then writes it to the store's `<prefix>/config`, only if nobody
 * wrote it in between (a compare-and-swap on the revision: the one read
 * just before, or `--if-revision`). Every member of the fleet then applies it.
 *
 * @param {string[]} args the arguments after `lila push`
 * @param {{stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream, env: NodeJS.ProcessEnv,
 *   check: (model: object) => void}} io `check` builds what a start would, and drops it
 * @returns {Promise<number>} 0 written, 1 refused by the store (a conflict, unreachable), 2 a usage or config error
 */
async function runPush(args, { stdout, stderr, env, check }) {
  let client = null;
  try {
    const { file, options, help } = readPushLine(args);
    if (help) {
      stdout.write(pushHelpText());
      return 0;
    }
    const fleet = storeOf(options, env);
    const model = readConfigFile(file);
    check(model);
    client = new EtcdClient({ endpoints: fleet.store.endpoints, tls: fleet.tls, user: fleet.store.user, password: fleet.store.password, timeout: 5000 });
    const key = `${fleet.store.prefix}/config`;
    const expected = options['if-revision'] !== undefined ? options['if-revision'] : (await client.get(key)).modRevision;
    let result = await client.putIf(key, model.text, expected);
    // A write whose answer was lost, tried again on another endpoint, finds itself there.
    if (!result.ok && result.value === model.text) result = { ok: true, revision: result.modRevision };
    if (!result.ok) {
      stderr.write(`lila: ${key} is at revision ${result.modRevision}, not ${expected}: someone wrote it meanwhile; nothing was written\n`);
      return 1;
    }
    for (const line of summary(model)) stdout.write(`${line}\n`);
    stdout.write(`lila: ${file} pushed to ${fleet.store.text} as revision ${result.revision}\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof LilaError)) throw err;
    stderr.write(`lila: ${err.message}\n${err.isUsageError && err.code !== codes.CONFIG ? `${USAGE}\n` : ''}`);
    return err.isUsageError ? 2 : 1;
  } finally {
    if (client !== null) client.close();
  }
}

// The file and the store options; anything else is a mistake.
function readPushLine(args) {
  let values;
  let positionals;
  try {
    ({ values, positionals } = parseArgs({ args, options: parseArgsOptions(), allowPositionals: true }));
  } catch (err) {
    throw new LilaError(codes.INVALID_OPTION, argumentProblem(err, LONG_NAMES));
  }
  if (values.help === true) return { help: true };
  const stray = OPTIONS.find((option) => values[option.name] !== undefined && !PUSH_OPTIONS.has(option.name));
  if (stray !== undefined) throw new LilaError(codes.INVALID_OPTION, `"--${stray.name}" is not an option of lila push`);
  if (positionals.length !== 1) throw new LilaError(codes.INVALID_OPTION, positionals.length === 0 ? 'push which config file?' : `push one config file, not ${positionals.length}`);
  if (values.store === undefined) throw new LilaError(codes.INVALID_OPTION, 'push to which store? give --store URL');
  return { file: positionals[0], options: readOptions(values) };
}

module.exports = { runPush, PUSH_OPTIONS };
