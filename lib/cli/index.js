'use strict';

const fs = require('node:fs');
const { parseArgs } = require('node:util');
const { createService } = require('../service');
const Logger = require('../ops/logger');
const { isLoopback } = require('../ops/admin-server');
const { strategies } = require('../balancing/strategies');
const { acmeOf } = require('./acme-command-line');
const { OPTIONS, LONG_NAMES, parseArgsOptions, readOptions, takeWords, checkDashes, argumentProblem } = require('../config/options');
const { modeMistake } = require('../config/config-model');
const { didYouMean } = require('../config/suggest');
const { helpOfTopic, usageText, HELP_TOPICS } = require('./help');
const { readToolCommandLine } = require('./tool-command-lines');
const { tlsOf } = require('../config/tls-options');
const { runHashPassword } = require('./hash-password');
const { runPush } = require('./push');
const { storeOf, rateLimitStoreOf } = require('./store-command-line');
const { tracingOf } = require('../config/tracing-values');
const { readText } = require('../config/read-text');
const { kubernetesOf } = require('./kubernetes-command-line');
const { startFollowing } = require('./start-following');
const { readConfigFile, parseConfig } = require('../config/config-file');
const { runCheck, checkConfig } = require('./check');
const { LilaError, codes } = require('../errors');
const { version } = require('../../package.json');

const DEFAULT_HOSTS_FILE = 'hosts';
const DEFAULT_CONFIG_FILE = 'lila.conf';
const TRY_HELP = 'Try "lila --help" for more information.';

/**
 * Runs the `lila` command line: parses the arguments, starts lila, and
 * resolves with the exit code once it is done (0 stopped cleanly, or
 * `--help`/`--version`; 1 a runtime failure; 2 a usage error). Bad input
 * gets one line on stderr; nothing here exits the process.
 *
 * @param {string[]} args the arguments after `lila`
 * @param {{stdin?: NodeJS.ReadableStream, stdout?: NodeJS.WritableStream, stderr?: NodeJS.WritableStream,
 *   env?: NodeJS.ProcessEnv}} [io] defaults to the process's
 * @returns {Promise<number>}
 */
async function run(args, io = {}) {
  const stdout = io.stdout || process.stdout;
  const stderr = io.stderr || process.stderr;
  const env = io.env || process.env;
  let service;
  // A subcommand: a hash for a --basic-auth file.
  if (args[0] === 'hash-password') return runHashPassword(args.slice(1), { stdin: io.stdin || process.stdin, stdout, stderr });
  // A subcommand: a config file written to a fleet's store.
  if (args[0] === 'push') {
    const check = (model) => checkConfig(model, new Logger({ stream: stderr }), acmeOf(model.global, env));
    return runPush(args.slice(1), { stdout, stderr, env, check });
  }
  if (args.length === 0 && !fs.existsSync(DEFAULT_HOSTS_FILE) && !fs.existsSync(DEFAULT_CONFIG_FILE)) {
    // A newcomer's first try: how to start, not the whole help.
    stderr.write(usageText());
    return 2;
  }
  try {
    const parsed = parseCommandLine(args, env);
    if (parsed.help) {
      stdout.write(helpOfTopic(parsed.topic));
      return 0;
    }
    if (parsed.version) {
      stdout.write(`${version}\n`);
      return 0;
    }
    if (parsed.check) return await runCheck(parsed.service, new Logger({ ...parsed.logger, stream: stderr }), { stdout, stderr });
    const logger = new Logger({ ...parsed.logger, stream: stderr });
    if (parsed.fleet !== undefined || parsed.kubernetes !== undefined) {
      const started = await startFollowing(parsed, { logger, stderr });
      if (typeof started === 'number') return started;
      service = started;
    } else {
      // Another tool's command line says so in the startup line.
      const label = parsed.tool === undefined ? undefined : `${parsed.tool} command line`;
      service = createService({ ...parsed.service, label, logger });
    }
  } catch (err) {
    if (!err.isUsageError) throw err;
    // A config file's mistake names its line: the help has nothing to add.
    stderr.write(err.code === codes.CONFIG || err.complete === true ? `lila: ${err.message}\n` : `lila: ${err.message}\n${TRY_HELP}\n`);
    return 2;
  }
  service.handleSignals();
  const started = service.start().then(() => service.exited, (err) => {
    // A worker's failure is said by its primary, once for every worker.
    if (!service.inWorker) stderr.write(`lila: ${err.message}\n`);
    return 1;
  });
  // The service may end before it listens: a signal, or workers dying.
  return Promise.race([started, service.exited]);
}

/**
 * Reads a command line as `lila` would, without starting anything: what to
 * run (a Service's options), or that help or the version was asked for
 * (`lila help config`, `lila --help config`: the config file's, as `topic`).
 * Relative files (./hosts, ./lila.conf) are looked for in the current directory.
 *
 * @param {string[]} args the arguments after `lila`
 * @param {NodeJS.ProcessEnv} [env] for LILA_ADMIN_TOKEN
 * @returns {{help?: true, topic?: string, version?: true, check?: boolean, tool?: string,
 *   logger?: {format?: string, level?: string, access: boolean, accessFormat?: string}, service?: object}}
 *   tool: the other balancer whose command line it is (`equilibrio`, `tcp-balancer`)
 * @throws {LilaError} a usage error (`isUsageError`), in one sentence
 */
function parseCommandLine(args, env = process.env) {
  let values;
  let positionals;
  let tokens;
  // `lila help [topic]` is `lila --help [topic]`: git's and npm's spelling.
  if (args[0] === 'help') return helpOf(args.slice(1), true);
  // Options of several words (--respond 200 ok) are taken out first.
  const taken = takeWords(args);
  checkDashes(taken.args);
  try {
    ({ values, positionals, tokens } = parseArgs({ args: taken.args, options: parseArgsOptions(), allowPositionals: true, tokens: true }));
  } catch (err) {
    throw new LilaError(codes.INVALID_OPTION, argumentProblem(err, LONG_NAMES));
  }
  Object.assign(values, taken.values);
  if (values.help) return helpOf(positionals, false);
  if (values.version) return { version: true };
  if (values['if-revision'] !== undefined) throw new LilaError(codes.INVALID_OPTION, '"--if-revision" goes with lila push FILE --store URL');
  // Another balancer's command line, in its own terms (equilibrio's -e, a port alone).
  const tool = readToolCommandLine(values, positionals);
  const [mode, ...servers] = tool === null ? positionals : [tool.mode, ...tool.servers];
  if (values.kubernetes === true && tool === null) return parseKubernetes(values, positionals, env);
  if (values.store !== undefined && tool === null && values.check !== true) {
    if (positionals.length > 0) throw new LilaError(codes.INVALID_OPTION, 'give a mode and servers or "--store", not both: the pools are in the store\'s configuration');
    return parseConfigured(values.config, values, env);
  }
  const configFile = tool === null ? configFileOf(values, positionals) : undefined;
  if (configFile !== undefined) return parseConfigured(configFile, values, env);
  if (values.check) throw new LilaError(codes.INVALID_OPTION, '"--check" checks a config file; give it with --config');
  if (mode === undefined) {
    throw new LilaError(codes.INVALID_OPTION, `no mode given; choose one of ${Object.keys(strategies).join(', ')}, or a path to a module`);
  }
  const mistake = modeMistake(mode);
  if (mistake !== null) throw new LilaError(codes.UNKNOWN_MODE, mistake);
  if (values['hash-key'] !== undefined && mode !== 'hash') {
    const why = mode === 'ip-hash' ? 'ip-hash always hashes the client ip' : `mode "${mode}" has no key`;
    throw new LilaError(codes.INVALID_OPTION, `"--hash-key" is for mode "hash"; ${why}`);
  }
  // A command line has one route, *, taking every request: conditions are a config file's routes'.
  const routeLineOnly = OPTIONS.find((option) => option.scope === 'match' && values[option.name] !== undefined);
  if (routeLineOnly !== undefined) {
    throw new LilaError(codes.INVALID_OPTION, `"--${routeLineOnly.name}" chooses between routes: give it on a route line of a config file (lila help config)`);
  }
  const options = readOptions(values);
  // A command line's one pool is no fleet's: --store's options without it are a mistake, --kubernetes' too.
  storeOf(options, env);
  kubernetesOf(options, env);
  const hostsFile = tool === null ? hostsFileOf(options.hosts, servers) : tool.hostsFile;
  // The one route of a command line matches every host: ACME has no name to order.
  if (options.acme !== undefined || options.tls === true) {
    throw new LilaError(codes.INVALID_OPTION, `"--${options.acme !== undefined ? 'acme' : 'tls'}" obtains certificates for the hosts that routes name: ` +
      'give them in a config file (lila --acme EMAIL --config lila.conf)');
  }
  const tls = tlsOf(options, tokens);
  if (options.watch && hostsFile === undefined && tls === undefined) {
    throw new LilaError(codes.INVALID_OPTION, '"--watch" follows a hosts file or certificates; give --hosts or --tls-cert');
  }
  const backendTls = { ca: options['backend-ca'], insecure: options['backend-insecure'] === true };
  // --redirect-https: the one route answers with 308 to https, unless it answers itself (as a config's routes).
  if (options['redirect-https'] === true) {
    if (tls !== undefined) throw new LilaError(codes.INVALID_OPTION, '"--redirect-https" answers plain http requests: with --tls-cert, they are https already');
    if (options.actions.redirect === undefined && options.actions.respond === undefined) options.actions.redirect = ['https://{host}{uri}', '308'];
  }
  // The tool's defaults, where lila's own options do not say otherwise.
  const defaults = tool === null ? {} : { layer: tool.layer };
  return {
    tool: tool === null ? undefined : tool.tool,
    logger: loggerOptions(options),
    service: {
      proxy: { mode, servers, ...defaults, ...options.proxy, tls, backendTls, actions: options.actions },
      redirectHttp: options['redirect-http'],
      hostsFile,
      watch: options.watch === true,
      port: options.port === undefined && tool !== null ? tool.port : options.port,
      host: options.address,
      drainTimeout: options['drain-timeout'],
      admin: adminOf(options, env),
      workers: options.workers,
      rateLimitStore: rateLimitStoreOf(options, env),
      tracing: tracingOf(options),
      cache: cacheOf(options)
    }
  };
}

module.exports = { run, parseCommandLine };

// --cache-size, --cache-dir and the cache's other global options, as the service takes them.
function cacheOf(options) {
  return {
    cacheSize: options['cache-size'], cacheDir: options['cache-dir'], cacheDirSize: options['cache-dir-size'],
    cacheMaxObject: options['cache-max-object'], cacheLockTimeout: options['cache-lock-timeout'], cacheStaleIfError: options['cache-stale-if-error']
  };
}

// What help was asked for: `lila help config`, `lila --help push`. Other words after --help
// are a command line's (lila round-robin a:1 --help), which gets the whole help; after `help`,
// they are a mistake.
function helpOf(words, asked) {
  const [topic] = words;
  const topics = Object.keys(HELP_TOPICS);
  if (topics.includes(topic) && (words.length === 1 || !asked)) return { help: true, topic };
  if (topic === undefined || !asked) return { help: true };
  const hint = didYouMean(topic, topics) || `: "lila help" shows the options, and knows ${topics.slice(0, -1).join(', ')} and ${topics.at(-1)}`;
  throw new LilaError(codes.INVALID_OPTION, `no help on "${words.join(' ')}"${hint}`);
}

// The Logger's options; --access-log-format implies --access-log.
function loggerOptions(options) {
  const logger = { format: options['log-format'], level: options['log-level'], access: options['access-log'] === true };
  if (options['access-log-format'] !== undefined) Object.assign(logger, { access: true, accessFormat: options['access-log-format'] });
  return logger;
}

// --config, or ./lila.conf when nothing else says what to serve; undefined otherwise.
function configFileOf(values, positionals) {
  if (values.config !== undefined) {
    if (positionals.length > 0) {
      throw new LilaError(codes.INVALID_OPTION, `give a mode and servers or "--config", not both: the pools are in ${values.config}`);
    }
    if (values.hosts !== undefined) throw new LilaError(codes.INVALID_OPTION, 'give "--hosts" or "--config", not both: a pool\'s servers are in the config file');
    return values.config;
  }
  if (positionals.length === 0 && values.hosts === undefined && fs.existsSync(DEFAULT_CONFIG_FILE)) return DEFAULT_CONFIG_FILE;
  return undefined;
}

// lila --config FILE: the file says what to serve; the command line may add global options only.
// With --store, the store's configuration does (the file, if given, seeds an empty store).
function parseConfigured(file, values, env) {
  refuseLineOptions(values);
  // The command line's global options win over the file's, at start and at every reload.
  const given = readOptions(values);
  const fleet = values.check === true ? null : storeOf(given, env);
  if (fleet !== null) return parseStored(file, given, fleet, env);
  const model = configuredModel(readConfigFile(file), given);
  return {
    check: values.check === true,
    logger: loggerOptions(model.global),
    service: configuredService(model, file, given, env)
  };
}

// A pool's, a listen line's or a route's option on the command line of a config (or of a cluster).
function refuseLineOptions(values) {
  for (const option of OPTIONS) {
    if (values[option.name] === undefined || option.scope === 'global' || ['config', 'check'].includes(option.name) || option.group === 'kubernetes') continue;
    const line = { layer: 'a pool or listen', pool: 'a pool', route: 'a route or listen', 'listener-route': 'a listen or route', match: 'a route' }[option.scope] || 'a listen';
    throw new LilaError(codes.INVALID_OPTION, `"--${option.name}" goes in the config file, on ${option.scope === 'command' ? 'no line: it is for a command line without --config' : `${line} line`}`);
  }
}

// The command line's global options over a config's, at start and at every reload.
function configuredModel(model, given) {
  model.global = { ...model.global, ...given, proxy: { ...model.global.proxy, ...given.proxy } };
  return model;
}

// What a Service runs of a config model: `file` is read again on SIGHUP (none for a stored one).
function configuredService(model, file, given, env, label = file) {
  const options = model.global;
  const reread = (next) => {
    configuredModel(next, given);
    next.warnings.push(...readAtStartChanged(options, next));
    return next;
  };
  return {
    config: model,
    configFile: file,
    loadConfig: file === undefined ? undefined : () => reread(readConfigFile(file)),
    // PUT /config: a text run as the file is (its mistakes named by line).
    // What lila makes of a cluster may serve nothing yet: it waits for a Gateway or an Ingress.
    parseConfig: (text) => reread(parseConfig(text, label, { mayServeNothing: given.kubernetes === true })),
    watch: options.watch === true,
    drainTimeout: options['drain-timeout'],
    admin: adminOf(options, env),
    workers: options.workers,
    acme: acmeOf(options, env),
    rateLimitStore: rateLimitStoreOf(options, env),
    tracing: tracingOf(options),
    cache: cacheOf(options)
  };
}

// lila --kubernetes: the configuration is made of the cluster's resources once lila reads them.
function parseKubernetes(values, positionals, env) {
  if (positionals.length > 0 || ['config', 'hosts', 'check'].some((name) => values[name] !== undefined)) {
    throw new LilaError(codes.INVALID_OPTION, '"--kubernetes" serves what the cluster\'s resources say: give no mode, servers, --config, --hosts or --check with it');
  }
  refuseLineOptions(values);
  const given = readOptions(values);
  const kubernetes = kubernetesOf(given, env);
  return {
    logger: loggerOptions(given),
    kubernetes,
    serviceOf: (text) => configuredService(configuredModel(parseConfig(text, 'kubernetes', { mayServeNothing: true }), given), undefined, given, env, 'kubernetes')
  };
}

// lila --store URL [--config FILE]: the store's configuration is read (or seeded) once lila
// runs, so the service is made of its text then (`serviceOf`).
function parseStored(file, given, fleet, env) {
  const seed = file === undefined ? null : { text: readText(file, 'config file', codes.CONFIG), file };
  // A seed is checked as the file it is, before anything connects.
  if (seed !== null) configuredModel(parseConfig(seed.text, file), given);
  const label = `${fleet.store.prefix}/config`;
  return {
    logger: loggerOptions(given),
    fleet,
    seed,
    serviceOf: (text) => {
      const model = configuredModel(parseConfig(text, label), given);
      const service = configuredService(model, undefined, given, env, label);
      if (service.workers !== undefined && service.workers > 0) {
        throw new LilaError(codes.INVALID_OPTION, '"--workers" does not go with --store yet: run one lila per machine, each a member of the fleet');
      }
      return service;
    }
  };
}

// What a reload says of the global options read only at start (--admin, --workers, --acme, ...)
// that the file now gives otherwise: they change when lila restarts, not before.
function readAtStartChanged(running, next) {
  const warnings = [];
  for (const option of OPTIONS) {
    if (option.scope !== 'global' || option.reloads === true) continue;
    const key = option.alias || option.name;
    const [was, now] = [running, next.global].map((global) => JSON.stringify(option.key === undefined ? global[key] : global.proxy[option.key]));
    if (was === now) continue;
    const line = next.globalLines === undefined ? undefined : next.globalLines[option.name];
    const where = line === undefined ? next.file : `${next.file}:${line}`;
    warnings.push(`${where}: "--${option.name}" changed, and lila reads it only at start: it stays as it was until lila restarts`);
  }
  return warnings;
}

// The hosts file to read, or undefined when the servers are on the command line.
function hostsFileOf(file, servers) {
  if (file !== undefined) {
    if (servers.length > 0) throw new LilaError(codes.INVALID_OPTION, 'give servers on the command line or with "--hosts", not both');
    return file;
  }
  return servers.length === 0 && fs.existsSync(DEFAULT_HOSTS_FILE) ? DEFAULT_HOSTS_FILE : undefined;
}

// --admin and its token (--admin-token or LILA_ADMIN_TOKEN), or null.
function adminOf(options, env) {
  if (options.admin === undefined) return null;
  const { host, port, text } = options.admin;
  const token = options['admin-token'] !== undefined ? options['admin-token'] : env.LILA_ADMIN_TOKEN;
  if (host !== undefined && !isLoopback(host) && (token === undefined || token === '')) {
    throw new LilaError(
      codes.INVALID_OPTION,
      `"--admin ${text}" is reachable from other machines; set --admin-token (or LILA_ADMIN_TOKEN), or bind it to 127.0.0.1`
    );
  }
  return { host, port, token: token === '' ? undefined : token };
}
