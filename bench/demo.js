'use strict';

const net = require('node:net');
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const { startBackends } = require('./backends');

const LILA = path.join(__dirname, '..', 'lila');
// The ports `npm start` takes unless the environment names others. A default that is taken is
// replaced by a free port; a port the environment names is that port or an error.
const DEFAULTS = { port: 4444, admin: 9000, backends: [8001, 8002, 8003] };
const STARTED = /listening on \S+:(\d+) ->/;
const ADMIN = /admin API listening on http:\/\/\S+:(\d+)/;
const SIGNALLED = /\b(SIGINT|SIGTERM) received\b/;
// Ctrl-C reaches lila too (it is in the demo's process group): how long the demo waits for lila
// to say so before it sends its own SIGTERM, as a second signal would stop lila at once.
const OWN_SIGINT_MS = 250;

main();

// `npm start`: backends A, B, C on 127.0.0.1, the real lila round-robin in front of them, its
// dashboard on 127.0.0.1; prints where to look once lila listens.
async function main() {
  let settings;
  try {
    settings = readSettings(process.env);
  } catch (err) {
    process.stderr.write(`lila demo: ${err.message}\n`);
    process.exitCode = 2;
    return;
  }
  let running;
  let port;
  let admin;
  try {
    running = await startDemoBackends(settings.backends);
    port = await portFor(settings.port, undefined);
    admin = await portFor(settings.admin, '127.0.0.1');
  } catch (err) {
    if (running !== undefined) await running.close();
    process.stderr.write(`lila demo: ${listenProblem(err)}\n`);
    process.exitCode = 1;
    return;
  }
  const servers = running.backends.map((backend) => `127.0.0.1:${backend.port}`);
  const lila = spawn(process.execPath, [LILA, 'round-robin', ...servers, '-p', String(port), '--admin', `127.0.0.1:${admin}`], {
    stdio: ['ignore', 'inherit', 'pipe']
  });
  let stopping = false;
  let lilaStopping = false;
  let adminPort = null;
  readline.createInterface({ input: lila.stderr }).on('line', (line) => {
    process.stderr.write(`${line}\n`);
    if (SIGNALLED.test(line)) lilaStopping = true;
    const listening = ADMIN.exec(line);
    if (listening !== null) adminPort = Number(listening[1]);
    const started = STARTED.exec(line);
    if (started !== null) printHowTo(settings, running.backends, Number(started[1]), adminPort);
  });
  let forwarding = null;
  lila.on('close', async (code) => {
    clearTimeout(forwarding);
    await running.close();
    process.exitCode = stopping ? 0 : code === null ? 1 : code;
  });
  const forward = () => {
    if (!lilaStopping && lila.exitCode === null) lila.kill('SIGTERM');
  };
  const stop = (signal) => {
    if (stopping) return;
    stopping = true;
    if (signal === 'SIGINT') forwarding = setTimeout(forward, OWN_SIGINT_MS);
    else forward();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

/**
 * The demo's ports: LILA_DEMO_PORT (lila), LILA_DEMO_ADMIN_PORT (its dashboard) and
 * LILA_DEMO_BACKEND_PORTS (comma-separated, one backend each), else the defaults.
 *
 * @param {object} env
 * @returns {{port: Wanted, admin: Wanted, backends: Wanted[]}} where `Wanted` is
 *   `{port: number, given: boolean}`: `given` when the environment named it (0: any free port)
 * @throws {RangeError} when a variable is not a port or a list of them
 */
function readSettings(env) {
  const one = (name, fallback) => {
    if (env[name] === undefined || env[name] === '') return { port: fallback, given: false };
    return { port: readPort(name, env[name]), given: true };
  };
  const list = env.LILA_DEMO_BACKEND_PORTS;
  let backends;
  if (list === undefined || list === '') {
    backends = DEFAULTS.backends.map((port) => ({ port, given: false }));
  } else {
    backends = list.split(',').map((text) => ({ port: readPort('LILA_DEMO_BACKEND_PORTS', text.trim()), given: true }));
    if (backends.length > 26) throw new RangeError(`LILA_DEMO_BACKEND_PORTS names 26 backends at most, received ${backends.length}`);
  }
  return { port: one('LILA_DEMO_PORT', DEFAULTS.port), admin: one('LILA_DEMO_ADMIN_PORT', DEFAULTS.admin), backends };
}

function readPort(name, text) {
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) > 65535) {
    throw new RangeError(`${name} must be a port between 0 and 65535 (or a list of them), received "${text}"`);
  }
  return Number(text);
}

// The backends on their ports, a free one in place of each taken default.
async function startDemoBackends(wanted) {
  const ports = wanted.map((w) => w.port);
  for (;;) {
    try {
      return await startBackends(ports.length, { ports });
    } catch (err) {
      const i = err.code === 'EADDRINUSE' ? ports.indexOf(err.port) : -1;
      if (i === -1 || wanted[i].given || ports[i] === 0) throw err;
      ports[i] = 0;
    }
  }
}

// The port lila is given: a default that is taken now becomes 0, any free port, which lila's
// own line then names. Checked as lila listens: `host` undefined is every interface.
async function portFor(wanted, host) {
  if (wanted.given || wanted.port === 0) return wanted.port;
  return (await isFree(wanted.port, host)) ? wanted.port : 0;
}

function isFree(port, host) {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err) => {
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') resolve(false);
      else reject(err);
    });
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

function printHowTo(settings, backends, port, adminPort) {
  const names = backends.map((backend) => backend.name);
  const lines = [
    `lila round-robin on port ${port}, in front of backends ${names.join(', ')} on 127.0.0.1:` +
      `${backends.map((backend) => backend.port).join(', ')}.`,
    `Open:       http://localhost:${port}/   (curl it a few times: ${[...names, names[0]].join(', ')}, ...)`
  ];
  if (adminPort !== null) lines.push(`Dashboard:  http://127.0.0.1:${adminPort}/`);
  const moved = (what, wanted, now, variable) => {
    if (!wanted.given && now !== wanted.port) lines.push(`Port ${wanted.port} was taken: ${what} is on a free one (${variable} chooses).`);
  };
  moved('lila', settings.port, port, 'LILA_DEMO_PORT');
  if (adminPort !== null) moved('the dashboard', settings.admin, adminPort, 'LILA_DEMO_ADMIN_PORT');
  backends.forEach((backend, i) => moved(`backend ${backend.name}`, settings.backends[i], backend.port, 'LILA_DEMO_BACKEND_PORTS'));
  lines.push('Stop with Ctrl-C.');
  process.stdout.write(`${lines.join('\n')}\n`);
}

function listenProblem(err) {
  if (err.code === 'EADDRINUSE') {
    return `cannot start a demo backend: 127.0.0.1:${err.port} is already in use`;
  }
  return `cannot start the demo: ${err.message}`;
}
