'use strict';

// A real redis-server for the tests of lila's Redis client: one process on a 127.0.0.1 port,
// which a test stops, kills, pauses and starts again. Only LILA_REDIS_SERVER names the
// executable (.ci/run installs Debian's redis-server and sets it on one Node version); locally:
//
//   apt-get install redis-server   # then stop the daemon it may have started
//   LILA_REDIS_SERVER=$(command -v redis-server) npx mocha test/store-redis.test.js

const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const tls = require('node:tls');
const { spawn } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { RespParser, ReplyError, encodeCommand } = require('../lib/store/resp');
const { freePorts, onCleanup } = require('./helpers');

const REDIS = executable(process.env.LILA_REDIS_SERVER);
const READY_WITHIN = 10000;
// What one command of cli() or of the readiness probe waits for its reply.
const ASK_WITHIN = 2000;
const POLL = 25;
const KEEP_OUTPUT = 64 * 1024;
// Every redis-server still running: killed when mocha exits, should a cleanup step before theirs have thrown.
const running = new Set();
process.once('exit', () => {
  for (const child of running) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
});

/**
 * In a mocha `before`: skips the suite, saying why, unless LILA_REDIS_SERVER names an
 * executable, or fails it when `LILA_REQUIRE_REDIS=1`.
 *
 * @param {Mocha.Context} context
 */
function needRedis(context) {
  if (REDIS !== null) return;
  const missing = `LILA_REDIS_SERVER does not name an executable (LILA_REDIS_SERVER=${process.env.LILA_REDIS_SERVER || ''}); ` +
    'install redis-server and set LILA_REDIS_SERVER=$(command -v redis-server)';
  if (process.env.LILA_REQUIRE_REDIS === '1') throw new Error(`LILA_REQUIRE_REDIS=1 but ${missing}`);
  console.log(`      skipped: ${missing}`);
  context.skip();
}

/**
 * Starts redis-server on a free 127.0.0.1 port, with nothing saved to disk, and resolves once it
 * answers PING; it is killed on cleanup (resumed first if paused).
 *
 * @param {{password?: string, aclUser?: {name: string, password: string},
 *   tls?: {certFile: string, keyFile: string, caFile: string}}} [options] password: the default
 *   user's (`--requirepass`); aclUser: a user of its own with every right; tls: the port speaks
 *   TLS only, with this certificate (clients are not asked for one)
 * @returns {Promise<{port: number, url: string, stop: () => Promise<void>, kill: () => Promise<void>,
 *   start: () => Promise<void>, pause: () => void, resume: () => void,
 *   cli: (args: Array<string | number>, options?: {db?: number}) => Promise<unknown>, output: () => string}>}
 *   url: `redis://127.0.0.1:PORT` (`rediss://` with tls; with the password, or the ACL user, when set); start(): again on
 *   the same port; cli(): one command on a connection of its own (authenticated, in `db`), its reply
 *   as lila's parser reads it (an error reply rejects); output(): what the server wrote
 */
async function startRedis(options = {}) {
  if (REDIS === null) throw new Error('startRedis: LILA_REDIS_SERVER does not name an executable (call needRedis first)');
  // The port is found free and let go before redis-server binds it: another test process may
  // take it in between, and then the server starts again on another.
  for (let attempt = 1; ; attempt++) {
    try {
      return await launch(options, (await freePorts(1))[0]);
    } catch (err) {
      if (attempt === 3 || !/Address already in use/i.test(err.message)) throw err;
    }
  }
}

module.exports = { REDIS, needRedis, startRedis };

async function launch({ password = null, aclUser = null, tls: tlsFiles = null }, port) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-redis-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
    '--dir', dir, '--loglevel', 'warning'];
  if (tlsFiles !== null) {
    args.splice(0, 2, '--port', '0', '--tls-port', String(port), '--tls-cert-file', tlsFiles.certFile,
      '--tls-key-file', tlsFiles.keyFile, '--tls-ca-cert-file', tlsFiles.caFile, '--tls-auth-clients', 'no');
  }
  const connect = tlsFiles === null
    ? () => net.connect({ host: '127.0.0.1', port })
    : () => tls.connect({ host: '127.0.0.1', port, ca: fs.readFileSync(tlsFiles.caFile), servername: 'localhost' });
  if (password !== null) args.push('--requirepass', password);
  if (aclUser !== null) args.push('--user', aclUser.name, 'on', `>${aclUser.password}`, '~*', '&*', '+@all');
  // cli() authenticates as the default user when it has a password, else as the ACL user.
  const auth = password !== null ? ['AUTH', password] : aclUser !== null ? ['AUTH', aclUser.name, aclUser.password] : null;
  let child = null;
  let output = '';
  let closed = null;
  let paused = false;
  const keep = (text) => { output = (output + text).slice(-KEEP_OUTPUT); };

  function spawnServer() {
    const started = spawn(REDIS, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    started.stdout.setEncoding('utf8').on('data', keep);
    started.stderr.setEncoding('utf8').on('data', keep);
    started.on('error', (err) => keep(`\nredis-server could not be started: ${err.message}\n`));
    running.add(started);
    // A child that could not be started emits 'error' and 'close', never 'exit'.
    closed = new Promise((resolve) => started.once('close', (code, signal) => {
      running.delete(started);
      resolve(code === null ? signal : code);
    }));
    child = started;
    paused = false;
  }

  async function untilAnswers() {
    const deadline = Date.now() + READY_WITHIN;
    let exit;
    closed.then((code) => { exit = code; });
    for (let last = 'no answer yet'; ;) {
      try {
        // NOAUTH is an answer too: the server is up.
        await ask(connect, [['PING']]).catch((err) => { if (!/^NOAUTH/.test(err.message)) throw err; });
        return;
      } catch (err) {
        last = err.message;
      }
      if (exit !== undefined) throw new Error(`redis-server exited (${exit}) before it answered PING:\n${output}`);
      if (Date.now() > deadline) throw new Error(`redis-server did not answer PING within ${READY_WITHIN} ms (${last}):\n${output}`);
      await sleep(POLL);
    }
  }

  const isRunning = () => child !== null && running.has(child);
  async function signal(name) {
    if (!isRunning()) return;
    if (paused) child.kill('SIGCONT');
    paused = false;
    child.kill(name);
    await closed;
  }

  const scheme = tlsFiles === null ? 'redis' : 'rediss';
  let url = `${scheme}://127.0.0.1:${port}`;
  if (password !== null) url = `${scheme}://:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  else if (aclUser !== null) url = `${scheme}://${encodeURIComponent(aclUser.name)}:${encodeURIComponent(aclUser.password)}@127.0.0.1:${port}`;
  const server = {
    port,
    url,
    stop: () => signal('SIGTERM'),
    kill: () => signal('SIGKILL'),
    async start() {
      if (!isRunning()) spawnServer();
      await untilAnswers();
    },
    pause() {
      if (!isRunning()) throw new Error('redis-server is not running');
      child.kill('SIGSTOP');
      paused = true;
    },
    resume() {
      if (!isRunning()) throw new Error('redis-server is not running');
      child.kill('SIGCONT');
      paused = false;
    },
    async cli(command, cliOptions = {}) {
      const commands = [];
      if (auth !== null) commands.push(auth);
      if (cliOptions.db !== undefined) commands.push(['SELECT', cliOptions.db]);
      commands.push(command);
      return ask(connect, commands);
    },
    output: () => output
  };
  onCleanup(() => signal('SIGKILL'));
  spawnServer();
  try {
    await untilAnswers();
  } catch (err) {
    await signal('SIGKILL');
    throw err;
  }
  return server;
}

// Commands on a connection of their own, written at once: resolves with the last one's reply,
// rejects with the first error reply (as an Error of its text) or when no reply comes in time.
function ask(connect, commands) {
  return new Promise((resolve, reject) => {
    const socket = connect();
    const parser = new RespParser();
    const replies = [];
    const finish = (err, value) => {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    const timer = setTimeout(() => finish(new Error(`${commands.at(-1)[0]}: no reply within ${ASK_WITHIN} ms`)), ASK_WITHIN);
    socket.on('error', (err) => finish(err));
    socket.on('close', () => finish(new Error(`${commands.at(-1)[0]}: the connection closed before its reply`)));
    socket.on('data', (chunk) => {
      try {
        replies.push(...parser.push(chunk));
      } catch (err) {
        finish(err);
        return;
      }
      const refused = replies.find((reply) => reply instanceof ReplyError);
      if (refused !== undefined) finish(new Error(refused.text));
      else if (replies.length === commands.length) finish(null, replies.at(-1));
    });
    socket.write(Buffer.concat(commands.map(encodeCommand)));
  });
}

function executable(file) {
  if (file === undefined || file === '') return null;
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile() ? file : null;
  } catch {
    return null;
  }
}
