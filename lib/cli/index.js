'use strict';

const fs = require('node:fs');
const { parseArgs } = require('node:util');
const Service = require('../service');
const Logger = require('../ops/logger');
const { isLoopback } = require('../ops/admin-server');
const { strategies } = require('../balancing/strategies');
const { parseArgsOptions, readOptions, argumentProblem } = require('./options');
const { helpText } = require('./help');
const { LilaError, codes } = require('../errors');
const { version } = require('../../package.json');

const DEFAULT_HOSTS_FILE = 'hosts';
const TRY_HELP = 'Try "lila --help" for more information.';

/**
 * Runs the `lila` command line: parses the arguments, starts lila, and
 * resolves with the exit code once it is done (0 stopped cleanly, or
 * `--help`/`--version`; 1 a runtime failure; 2 a usage error). Bad input
 * gets one line on stderr; nothing here exits the process.
 *
 * @param {string[]} args the arguments after `lila`
 * @param {{stdout?: NodeJS.WritableStream, stderr?: NodeJS.WritableStream, env?: NodeJS.ProcessEnv}} [io]
 *   defaults to the process's
 * @returns {Promise<number>}
 */
async function run(args, io = {}) {
  const stdout = io.stdout || process.stdout;
  const stderr = io.stderr || process.stderr;
  const env = io.env || process.env;
  let service;
  try {
    const parsed = parse(args, env);
    if (parsed.help) {
      stdout.write(helpText());
      return 0;
    }
    if (parsed.version) {
      stdout.write(`${version}\n`);
      return 0;
    }
    service = new Service({ ...parsed.service, logger: new Logger({ ...parsed.logger, stream: stderr }) });
  } catch (err) {
    if (!err.isUsageError) throw err;
    stderr.write(`lila: ${err.message}\n${TRY_HELP}\n`);
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

module.exports = { run };

// The arguments as a Service's options, or help or version.
function parse(args, env) {
  let values;
  let positionals;
  let tokens;
  try {
    ({ values, positionals, tokens } = parseArgs({ args, options: parseArgsOptions(), allowPositionals: true, tokens: true }));
  } catch (err) {
    throw new LilaError(codes.INVALID_OPTION, argumentProblem(err));
  }
  if (values.help) return { help: true };
  if (values.version) return { version: true };
  const [mode, ...servers] = positionals;
  if (mode === undefined) {
    throw new LilaError(codes.INVALID_OPTION, `no mode given; choose one of ${Object.keys(strategies).join(', ')}, or a path to a module`);
  }
  if (values['hash-key'] !== undefined && mode !== 'hash') {
    const why = mode === 'ip-hash' ? 'ip-hash always hashes the client ip' : `mode "${mode}" has no key`;
    throw new LilaError(codes.INVALID_OPTION, `"--hash-key" is for mode "hash"; ${why}`);
  }
  const options = readOptions(values);
  const hostsFile = hostsFileOf(options.hosts, servers);
  const tls = tlsOf(options, tokens);
  if (options.watch && hostsFile === undefined && tls === undefined) {
    throw new LilaError(codes.INVALID_OPTION, '"--watch" follows a hosts file or certificates; give --hosts or --tls-cert');
  }
  const backendTls = { ca: options['backend-ca'], insecure: options['backend-insecure'] === true };
  return {
    logger: { format: options['log-format'], level: options['log-level'], access: options['access-log'] === true },
    service: {
      proxy: { mode, servers, ...options.proxy, tls, backendTls },
      redirectHttp: options['redirect-http'],
      hostsFile,
      watch: options.watch === true,
      port: options.port,
      host: options.address,
      drainTimeout: options['drain-timeout'],
      admin: adminOf(options, env),
      workers: options.workers
    }
  };
}

// --tls-cert and --tls-key as pairs, each key with the certificate before
// it; --tls-min-version, --tls-ciphers, --tls-curves and --redirect-http need them. Undefined without TLS.
function tlsOf(options, tokens) {
  const certificates = [];
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    if (token.name === 'tls-cert') {
      certificates.push({ cert: token.value });
    } else if (token.name === 'tls-key') {
      const last = certificates[certificates.length - 1];
      if (last === undefined || last.key !== undefined) {
        throw new LilaError(codes.INVALID_OPTION, `"--tls-key ${token.value}" needs a --tls-cert before it, whose key it is`);
      }
      last.key = token.value;
    }
  }
  if (certificates.length > 0) {
    return { certificates, minVersion: options['tls-min-version'], ciphers: options['tls-ciphers'], curves: options['tls-curves'] };
  }
  for (const name of ['tls-min-version', 'tls-ciphers', 'tls-curves', 'redirect-http']) {
    if (options[name] !== undefined) throw new LilaError(codes.INVALID_OPTION, `"--${name}" is for a TLS listener; give its certificate with --tls-cert`);
  }
  return undefined;
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
