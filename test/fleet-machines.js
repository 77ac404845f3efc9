'use strict';

// lila members as separate machines. The members of a fleet share one configuration, so its
// ports: each runs in a network and UTS namespace of its own (`unshare -n -u`, as root), with its
// own loopback and hostname, and reaches etcd and backends outside through bridges over unix
// sockets (test/fixtures/socket-bridge.js), as separate machines reach them over a network.
//
//   outside (the test)                         inside the machine
//   127.0.0.1:<etcd>  <- forward-<p>.sock  <-  127.0.0.1:<p>    forward: [{port: p, to: '127.0.0.1:<etcd>'}]
//   127.0.0.1:<outer> -> port-<p>.sock     ->  127.0.0.1:<p>    expose: [p], machine.port(p) === <outer>

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { freePorts, onCleanup, untilWritten } = require('./helpers');
const { bridge } = require('./fixtures/socket-bridge');

const LAUNCHER = path.join(__dirname, 'fixtures', 'machine.js');
const READY_WITHIN = 10000;
const WAIT_FOR = 10000;
// Every machine still running: its process group killed when mocha exits, should a cleanup step before its own have thrown.
const running = new Set();
process.once('exit', () => {
  for (const child of running) killGroup(child, 'SIGKILL');
});
let unshareWorks = null;

/**
 * Whether this process may make machines: `unshare -n -u` works (root, or a kernel that lets
 * users make namespaces) and `ip` brings a loopback up. Asked once.
 *
 * @returns {boolean}
 */
function canMakeMachines() {
  if (unshareWorks === null) {
    const probe = spawnSync('unshare', ['-n', '-u', 'ip', 'link', 'set', 'lo', 'up'], { stdio: 'ignore', timeout: 5000 });
    unshareWorks = probe.status === 0;
  }
  return unshareWorks;
}

/**
 * In a mocha `before`: skips the suite, saying why, unless this process may make machines.
 *
 * @param {Mocha.Context} context
 */
function needMachines(context) {
  if (canMakeMachines()) return;
  // The leg that runs the etcd suites runs the fleet's machines too: there, not skipped.
  if (process.env.LILA_REQUIRE_ETCD === '1') throw new Error('LILA_REQUIRE_ETCD=1 but `unshare -n -u ip link set lo up` fails here (it needs root, and iproute2)');
  console.log('      skipped: `unshare -n -u ip link set lo up` fails here (it needs root, and iproute2)');
  context.skip();
}

/**
 * Starts a command on a machine of its own and resolves once the machine's bridges listen (the
 * command may not listen yet: wait for a line of its with `waitFor`). Killed, with everything it
 * started, on cleanup.
 *
 * @param {object} options
 * @param {string} options.name the machine's hostname
 * @param {{port: number, to: string}[]} [options.forward] inside, 127.0.0.1:port reaches `to`
 *   (`host:port`) outside
 * @param {number[]} [options.expose] ports on the machine's 127.0.0.1 the test reaches through `port(p)`
 * @param {string[]} options.command the file to run and its arguments (`[process.execPath, LILA, ...]`)
 * @param {Record<string, string>} [options.env] more of the command's environment
 * @param {string} [options.cwd] where the command starts
 * @returns {Promise<{name: string, child: import('node:child_process').ChildProcess, stdout: string,
 *   stderr: string, exited: Promise<{code: number | null, signal: string | null}>, port: (p: number) => number,
 *   waitFor: (pattern: RegExp, ms?: number) => Promise<RegExpExecArray>, stop: () => Promise<number | null>,
 *   kill: () => Promise<void>}>} child: the machine's first process (the launcher); stdout and stderr:
 *   what the command wrote so far; stop(): SIGTERM to the command, resolves with its exit code (null
 *   when a signal ended it); kill(): SIGKILL to every process of the machine
 */
async function startMachine({ name, forward = [], expose = [], command, env = {}, cwd }) {
  if (typeof name !== 'string' || !/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i.test(name)) {
    throw new TypeError(`"name" must be a hostname label, received ${JSON.stringify(name)}`);
  }
  if (!Array.isArray(command) || command.length === 0) throw new TypeError('"command" must be a non-empty array');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `lila-machine-${name}-`));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const forwardSocket = (port) => path.join(dir, `forward-${port}.sock`);
  const exposeSocket = (port) => path.join(dir, `port-${port}.sock`);
  const outerPorts = new Map();
  (await freePorts(expose.length)).forEach((outer, i) => outerPorts.set(expose[i], outer));

  const outside = await bridge([
    ...forward.map(({ port, to }) => `unix:${forwardSocket(port)}=tcp:${to}`),
    ...expose.map((port) => `tcp:127.0.0.1:${outerPorts.get(port)}=unix:${exposeSocket(port)}`)
  ]);
  onCleanup(() => outside.close());
  const config = {
    name,
    bridges: [
      // The same port number inside as outside: a URL works on either side.
      ...forward.map(({ port }) => `tcp:127.0.0.1:${port}=unix:${forwardSocket(port)}`),
      ...expose.map((port) => `unix:${exposeSocket(port)}=tcp:127.0.0.1:${port}`)
    ],
    command,
    env,
    cwd
  };
  // Detached: the machine is a process group of its own, which kill() ends whole.
  const child = spawn('unshare', ['-n', '-u', process.execPath, LAUNCHER, JSON.stringify(config)], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe']
  });
  running.add(child);
  const machine = {
    name,
    child,
    stdout: '',
    stderr: '',
    exited: null,
    port(p) {
      if (!outerPorts.has(p)) throw new Error(`machine ${name} does not expose port ${p} (it exposes ${expose.join(', ') || 'none'})`);
      return outerPorts.get(p);
    },
    waitFor(pattern, ms = WAIT_FOR) {
      return untilWritten(machine, () => {
        for (const line of machine.stderr.split('\n').slice(0, -1)) {
          const match = pattern.exec(line);
          if (match !== null) return match;
        }
        return null;
      }, `line matching ${pattern} from machine ${name}`, ms);
    },
    async stop() {
      if (running.has(child)) child.kill('SIGTERM');
      return (await machine.exited).code;
    },
    async kill() {
      killGroup(child, 'SIGKILL');
      await machine.exited;
    }
  };
  child.stdout.setEncoding('utf8').on('data', (text) => { machine.stdout += text; });
  child.stderr.setEncoding('utf8').on('data', (text) => { machine.stderr += text; });
  // 'close' comes once every process holding the machine's stdout and stderr has ended.
  machine.exited = new Promise((resolve, reject) => {
    child.once('error', (err) => {
      running.delete(child);
      reject(err);
    });
    child.once('close', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  machine.exited.catch(() => {});
  onCleanup(() => machine.kill().catch(() => {}));
  await ready(machine);
  return machine;
}

module.exports = { canMakeMachines, needMachines, startMachine };

// Resolves once the launcher says its bridges listen; rejects with its stderr if it ends first.
function ready(machine) {
  return new Promise((resolve, reject) => {
    let said = '';
    const timer = setTimeout(() => fail(new Error(`machine ${machine.name} was not ready within ${READY_WITHIN} ms; stderr:\n${machine.stderr}`)),
      READY_WITHIN);
    const fail = (err) => {
      clearTimeout(timer);
      reject(err);
    };
    machine.child.stdio[3].setEncoding('utf8').on('data', (text) => {
      said += text;
      if (said.includes('ready\n')) {
        clearTimeout(timer);
        resolve();
      }
    });
    machine.child.stdio[3].on('error', () => {});
    machine.exited.then(({ code, signal }) => {
      fail(new Error(`machine ${machine.name} exited (code ${code}, signal ${signal}) before it was ready; stderr:\n${machine.stderr}`));
    }, fail);
  });
}

// The group of a machine that has not closed yet: once it has, its number may be another's.
function killGroup(child, signal) {
  if (!running.has(child)) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}
