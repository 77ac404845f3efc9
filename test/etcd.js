'use strict';

// A real etcd for the tests of lila's store: one member or a cluster of three on 127.0.0.1, whose
// members a test kills, stops and starts again. Only LILA_ETCD names the executable (.ci/run
// builds etcd 3.6.6 from .ci/etcd and sets it on one Node version); locally:
//
//   (cd .ci/etcd && go build -o /tmp/etcd go.etcd.io/etcd/server/v3)
//   LILA_ETCD=/tmp/etcd npx mocha test/fleet*.test.js

const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { freePorts, onCleanup } = require('./helpers');

const ETCD = executable(process.env.LILA_ETCD);
const BUILD = '(cd .ci/etcd && go build -o /tmp/etcd go.etcd.io/etcd/server/v3)';
const READY_WITHIN = 15000;
// What a put or get waits for an answer from one member before it asks the next.
const ASK_WITHIN = 1000;
// A put or a get keeps asking for this long: a cluster electing a leader answers nothing.
const ANSWER_WITHIN = 8000;
const POLL = 25;
const KEEP_OUTPUT = 64 * 1024;
// Every etcd still running: killed when mocha exits, should a cleanup step before theirs have thrown.
const running = new Set();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * In a mocha `before`: skips the suite, saying why, unless LILA_ETCD names an executable, or
 * fails it when `LILA_REQUIRE_ETCD=1`.
 *
 * @param {Mocha.Context} context
 */
function needEtcd(context) {
  if (ETCD !== null) return;
  const missing = `LILA_ETCD does not name an executable (LILA_ETCD=${process.env.LILA_ETCD || ''}); ` +
    `build etcd with: ${BUILD}`;
  if (process.env.LILA_REQUIRE_ETCD === '1') throw new Error(`LILA_REQUIRE_ETCD=1 but ${missing}`);
  console.log(`      skipped: ${missing}`);
  context.skip();
}

/**
 * Starts an etcd cluster on free 127.0.0.1 ports and resolves once every member is healthy;
 * everything is killed, and the data removed, on cleanup (or by `close()` alone, with `suite`).
 * Elections are fast (heartbeat 50 ms, election timeout 500 ms) and nothing is fsynced: a killed
 * process loses nothing, a machine would.
 *
 * @param {{members?: number, suite?: boolean, hosts?: string[]}} [options] members: 1 or 3 (default 1);
 *   suite: outlives the test's cleanup, for `etcdPerSuite` (its `after` closes it); hosts: more
 *   addresses of this machine its members serve clients on, beside 127.0.0.1 (same port)
 * @returns {Promise<{endpoints: string[], url: string, members: {name: string, clientPort: number,
 *   peerPort: number, process: import('node:child_process').ChildProcess | null}[],
 *   leader: () => Promise<number>, kill: (i: number) => Promise<void>, stop: (i: number) => Promise<void>,
 *   start: (i: number) => Promise<void>, stopAll: () => Promise<void>, startAll: () => Promise<void>,
 *   put: (key: string, value: string) => Promise<void>, get: (key: string) => Promise<string | null>,
 *   close: () => Promise<void>, output: (i: number) => string, prefix: string}>} url: `etcd://127.0.0.1:p1,127.0.0.1:p2,...`,
 *   as lila's --store takes it; prefix: where a fleet named by url keeps its keys (`/lila`); leader(): the index of the member that leads; start(i): again, on its
 *   data and ports; put and get: through whichever member answers; output(i): what member i wrote
 */
async function startEtcd({ members: count = 1, suite = false, hosts = [] } = {}) {
  if (count !== 1 && count !== 3) throw new TypeError(`"members" must be 1 or 3, received ${count}`);
  if (ETCD === null) throw new Error('startEtcd: LILA_ETCD does not name an executable (call needEtcd first)');
  // The ports are found free and let go before etcd binds them: another test process may take
  // one in between, and then the cluster starts again on others.
  for (let attempt = 1; ; attempt++) {
    try {
      return await launchCluster(count, { suite, hosts });
    } catch (err) {
      if (attempt === 3 || !/address already in use/.test(err.message)) throw err;
    }
  }
}

/**
 * One etcd for every test of a mocha suite, each test under a prefix of its own: call it in a
 * `describe`; it starts etcd in a `before` (skipping the suite as `needEtcd` does) and kills it in
 * an `after`. A test that stops or kills etcd starts its own with `startEtcd` instead.
 *
 * @param {{members?: number}} [options] as `startEtcd`'s
 * @returns {() => ReturnType<typeof scoped>} in a test (or a `beforeEach`): the etcd under a prefix
 *   no other test of the run uses
 */
function etcdPerSuite(options = {}) {
  let etcd = null;
  before(async function () {
    this.timeout(READY_WITHIN * 3);
    needEtcd(this);
    etcd = await startEtcd({ ...options, suite: true });
  });
  after(() => (etcd === null ? undefined : etcd.close()));
  return () => scoped(etcd, `/lila-${++prefixes}`);
}

/**
 * A started etcd seen under `prefix`, as a fleet named by `url` sees it: `url` names the prefix,
 * `prefix` is what the store's keys start with (`${prefix}/config`), and the rest is the cluster's.
 *
 * @param {Awaited<ReturnType<typeof startEtcd>>} etcd
 * @param {string} prefix
 */
function scoped(etcd, prefix) {
  return { ...etcd, url: `${etcd.url}${prefix}`, prefix };
}

module.exports = { ETCD, needEtcd, startEtcd, etcdPerSuite };

let prefixes = 0;

// startEtcd on ports found free now.
async function launchCluster(count, { suite, hosts }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-etcd-'));
  const ports = await freePorts(2 * count);
  const members = Array.from({ length: count }, (_, i) => ({
    name: `etcd${i}`,
    clientPort: ports[2 * i],
    peerPort: ports[2 * i + 1],
    process: null
  }));
  const initialCluster = members.map((m) => `${m.name}=http://127.0.0.1:${m.peerPort}`).join(',');
  // Per member: its output and when its process closed, kept apart from the object handed out.
  const state = members.map(() => ({ output: '', closed: null }));

  function launch(i) {
    const member = members[i];
    const client = `http://127.0.0.1:${member.clientPort}`;
    const clients = [client, ...hosts.map((host) => `http://${host}:${member.clientPort}`)].join(',');
    const peer = `http://127.0.0.1:${member.peerPort}`;
    // Flags that only count on the first start (initial-*) are ignored once the data directory holds a member.
    const child = spawn(ETCD, [
      '--name', member.name, '--data-dir', path.join(dir, member.name),
      '--listen-client-urls', clients, '--advertise-client-urls', client,
      '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
      '--initial-cluster', initialCluster, '--initial-cluster-state', 'new',
      '--initial-cluster-token', path.basename(dir),
      '--log-level', 'error', '--heartbeat-interval', '50', '--election-timeout', '500',
      '--unsafe-no-fsync'
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (text) => { state[i].output = (state[i].output + text).slice(-KEEP_OUTPUT); };
    child.stdout.setEncoding('utf8').on('data', keep);
    child.stderr.setEncoding('utf8').on('data', keep);
    child.on('error', (err) => keep(`\netcd could not be started: ${err.message}\n`));
    running.add(child);
    // A child that could not be started emits 'error' and 'close', never 'exit'.
    state[i].closed = new Promise((resolve) => child.once('close', (code, signal) => {
      running.delete(child);
      resolve(code === null ? signal : code);
    }));
    member.process = child;
  }

  async function untilHealthy(i) {
    const member = members[i];
    const deadline = Date.now() + READY_WITHIN;
    let exit;
    state[i].closed.then((code) => { exit = code; });
    for (let last = 'no answer yet'; ;) {
      try {
        const health = JSON.parse(await call(member.clientPort, 'GET', '/health'));
        if (health.health === 'true') return;
        last = `health ${JSON.stringify(health)}`;
      } catch (err) {
        last = err.message;
      }
      if (exit !== undefined) throw new Error(`${member.name} exited (${exit}) before it was healthy:\n${state[i].output}`);
      if (Date.now() > deadline) {
        throw new Error(`${member.name} was not healthy within ${READY_WITHIN} ms (${last}):\n${state[i].output}`);
      }
      await sleep(POLL);
    }
  }

  const isRunning = (i) => members[i].process !== null && running.has(members[i].process);
  async function signal(i, name) {
    if (!isRunning(i)) return;
    members[i].process.kill(name);
    await state[i].closed;
  }
  async function start(i) {
    if (!isRunning(i)) launch(i);
    await untilHealthy(i);
  }
  const all = (fn) => Promise.all(members.map((_, i) => fn(i)));
  // What each running member says of itself (null: stopped, or no answer).
  const statuses = () => Promise.all(members.map((m, i) => isRunning(i)
    ? call(m.clientPort, 'POST', '/v3/maintenance/status', {}).then(JSON.parse, () => null)
    : null));

  // Asks each running member in turn, until one answers or ANSWER_WITHIN has passed.
  async function ask(pathname, body) {
    const deadline = Date.now() + ANSWER_WITHIN;
    const errors = [];
    for (;;) {
      for (let i = 0; i < count; i++) {
        if (!isRunning(i)) continue;
        try {
          return JSON.parse(await call(members[i].clientPort, 'POST', pathname, body));
        } catch (err) {
          errors.push(`${members[i].name}: ${err.message}`);
        }
      }
      if (Date.now() > deadline) throw new Error(`no etcd member answered ${pathname} within ${ANSWER_WITHIN} ms: ${errors.slice(-count).join('; ')}`);
      await sleep(POLL);
    }
  }

  const cluster = {
    endpoints: members.map((m) => `127.0.0.1:${m.clientPort}`),
    url: `etcd://${members.map((m) => `127.0.0.1:${m.clientPort}`).join(',')}`,
    // What a fleet named by `url` keeps its keys under: lila's default.
    prefix: '/lila',
    members,
    async leader() {
      const deadline = Date.now() + ANSWER_WITHIN;
      for (;;) {
        const answers = await statuses();
        // The member that says it leads, once every member that answered names the same one.
        const leaders = new Set(answers.filter((s) => s !== null).map((s) => s.leader));
        const index = answers.findIndex(saysItLeads);
        if (index !== -1 && leaders.size === 1) return index;
        if (Date.now() > deadline) throw new Error(`no etcd member was the leader within ${ANSWER_WITHIN} ms`);
        await sleep(POLL);
      }
    },
    kill: (i) => signal(i, 'SIGKILL'),
    stop: (i) => signal(i, 'SIGTERM'),
    start,
    async stopAll() {
      // One at a time, the leader first: it hands its leadership over and goes at once, where
      // members stopping together wait seconds for each other.
      const leader = (await statuses()).findIndex(saysItLeads);
      for (const i of [leader, ...members.keys()]) if (i !== -1) await signal(i, 'SIGTERM');
    },
    // All at once: a member of three is healthy only once another has joined it.
    startAll: () => all(start).then(() => {}),
    async put(key, value) {
      await ask('/v3/kv/put', { key: base64(key), value: base64(value) });
    },
    async get(key) {
      const { kvs } = await ask('/v3/kv/range', { key: base64(key) });
      return kvs === undefined ? null : Buffer.from(kvs[0].value || '', 'base64').toString();
    },
    close: () => all((i) => signal(i, 'SIGKILL')).then(() => fs.rmSync(dir, { recursive: true, force: true })),
    // What member i wrote, for failure messages.
    output: (i) => state[i].output
  };
  if (!suite) onCleanup(() => cluster.close());
  try {
    members.forEach((_, i) => launch(i));
    await all(untilHealthy);
  } catch (err) {
    await cluster.close();
    throw err;
  }
  return cluster;
}

// One request to a member's HTTP gateway; resolves with the body of a 200, rejects otherwise.
function call(port, method, pathname, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const request = http.request({ host: '127.0.0.1', port, method, path: pathname, agent: false, timeout: ASK_WITHIN }, (response) => {
      let text = '';
      response.setEncoding('utf8').on('data', (chunk) => { text += chunk; });
      response.on('error', reject);
      response.on('end', () => {
        if (response.statusCode === 200) resolve(text);
        else reject(new Error(`${method} ${pathname}: ${response.statusCode} ${text.trim()}`));
      });
    });
    request.on('timeout', () => request.destroy(new Error(`${method} ${pathname}: no answer within ${ASK_WITHIN} ms`)));
    request.on('error', reject);
    request.end(payload);
  });
}

function saysItLeads(status) {
  return status !== null && status.leader !== undefined && status.header.member_id === status.leader;
}

function base64(text) {
  return Buffer.from(text).toString('base64');
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
