'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const {
  cleanup,
  onCleanup,
  deferred,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  request,
  until,
  runLila,
  startLila,
  nextLine,
  keepAliveAgent
} = require('./helpers');

const TRY_HELP = 'Try "lila --help" for more information.';

/**
 * A fresh directory for hosts files, removed on cleanup; lila runs in it.
 *
 * @returns {string}
 */
function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-reload-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Writes a hosts file, one server a line.
 *
 * @param {string} file
 * @param {string[]} lines
 */
/**
 * A directory laid out as Kubernetes mounts a ConfigMap or a Secret: `name`
 * links to `..data/name`, `..data` to a timestamped directory, and an update
 * writes a new directory and swaps `..data` to it by renaming a new link over
 * it (`mv -T ..data_tmp ..data`).
 *
 * @param {string} dir
 * @param {string} name
 * @returns {{update: (content: string) => void}}
 */
function kubernetesMount(dir, name) {
  let version = 0;
  return {
    update(content) {
      const versioned = `..2026_11_25_${String(++version).padStart(2, '0')}`;
      fs.mkdirSync(path.join(dir, versioned));
      fs.writeFileSync(path.join(dir, versioned, name), content);
      fs.symlinkSync(versioned, path.join(dir, '..data_tmp'));
      fs.renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
      if (!fs.existsSync(path.join(dir, name))) fs.symlinkSync(path.join('..data', name), path.join(dir, name));
    }
  };
}

function writeHosts(file, lines) {
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// The body of a 200, else `<status> <body>`: one string to compare against names.
async function get(port, agent) {
  const response = await request(port, { agent });
  return response.status === 200 ? response.body : `${response.status} ${response.body.trim()}`;
}

async function getMany(port, agent, count) {
  const bodies = [];
  for (let i = 0; i < count; i++) bodies.push(await get(port, agent));
  return bodies;
}

function tally(names) {
  const counts = {};
  for (const name of names) counts[name] = (counts[name] || 0) + 1;
  return counts;
}

/**
 * Keeps `concurrency` keep-alive requests in flight through `port` until
 * stopped, recording each: when it started and ended, and the body of a 200
 * or what went wrong (`<status> <body>` or `client error <code>`).
 *
 * @param {number} port
 * @param {number} [concurrency]
 * @returns {{records: {start: number, end: number, result: string}[], stop: () => Promise<void>}}
 */
function startLoad(port, concurrency = 10) {
  const agent = keepAliveAgent(concurrency);
  const records = [];
  let running = true;
  const worker = async () => {
    while (running) {
      const record = { start: performance.now(), end: 0, result: '' };
      try {
        record.result = await get(port, agent);
      } catch (err) {
        record.result = `client error ${err.code || err.message}`;
      }
      record.end = performance.now();
      records.push(record);
    }
  };
  const workers = Array.from({ length: concurrency }, worker);
  const stop = async () => {
    running = false;
    await Promise.all(workers);
  };
  // A failed test must not leave it sending.
  onCleanup(stop);
  return { records, stop };
}

// What did not come back as a 200 from one of `names`.
function failures(records, names) {
  return records.filter((r) => !names.includes(r.result)).map((r) => r.result);
}

describe('reloading the hosts file', () => {
  afterEach(cleanup);

  describe('on SIGHUP (http)', () => {
    it('moves traffic from a removed backend to an added one under load, failing no request', async () => {
      const held = deferred();
      const arrived = deferred();
      const a = await startHttpBackend('A', (req, res) => {
        req.resume();
        if (req.url !== '/hold') {
          res.end('A');
          return;
        }
        arrived.resolve();
        held.promise.then(() => res.end('A held'));
      });
      const b = await startHttpBackend('B');
      const c = await startHttpBackend('C');
      const dir = tempDir();
      const hosts = path.join(dir, 'hosts');
      writeHosts(hosts, [`${a.address} name=A`, `${b.address} name=B`]);
      const lila = await startLila(['round-robin', '--hosts', 'hosts', '-p', '0', '-a', '127.0.0.1'], { cwd: dir });
      assert.equal(lila.line, `lila: round-robin (http) listening on 127.0.0.1:${lila.port} -> 2 servers from hosts`);

      // Round-robin's first pick is A: this request waits there across the reload.
      const heldResponse = request(lila.port, { agent: false, path: '/hold' });
      await arrived.promise;
      const load = startLoad(lila.port);
      await until(() => load.records.length >= 200, '200 requests went through');

      writeHosts(hosts, [`${b.address} name=B`, `${c.address} name=C`]);
      const reloaded = nextLine(lila, /lila: SIGHUP: [^\n]*/);
      lila.child.kill('SIGHUP');
      const { line, at } = await reloaded;
      assert.equal(line, 'lila: SIGHUP: reloaded hosts servers=2 added=C removed=A reweighted=-');

      await until(() => load.records.filter((r) => r.start > at && r.result === 'C').length >= 50,
        'C answered 50 requests after the reload');
      held.resolve();
      const heldAnswer = await heldResponse;
      await until(() => load.records.filter((r) => r.start > at).length >= 300, '300 requests after the reload');
      await load.stop();

      assert.equal(heldAnswer.status, 200);
      assert.equal(heldAnswer.body, 'A held');
      assert.deepEqual(failures(load.records, ['A', 'B', 'C']), []);
      const before = load.records.filter((r) => r.end < at);
      assert.deepEqual(Object.keys(tally(before.map((r) => r.result))).sort(), ['A', 'B']);
      // lila wrote the line after the reload, and a request the client
      // started after seeing it reached lila later still: picked from {B, C}.
      const after = load.records.filter((r) => r.start > at);
      assert.deepEqual(Object.keys(tally(after.map((r) => r.result))).sort(), ['B', 'C']);

      const agent = keepAliveAgent();
      assert.deepEqual(tally(await getMany(lila.port, agent, 30)), { B: 15, C: 15 });
      assert.equal(lila.child.exitCode, null);
      assert.doesNotMatch(lila.stderr, /error|warn/);
    });

    it('applies a changed weight', async () => {
      const a = await startHttpBackend('A');
      const b = await startHttpBackend('B');
      const dir = tempDir();
      const hosts = path.join(dir, 'hosts');
      writeHosts(hosts, [`${a.address} name=A weight=1`, `${b.address} name=B weight=1`]);
      const lila = await startLila(['round-robin', '--hosts', 'hosts', '-p', '0', '-a', '127.0.0.1'], { cwd: dir });
      const agent = keepAliveAgent();
      assert.deepEqual(await getMany(lila.port, agent, 4), ['A', 'B', 'A', 'B']);

      writeHosts(hosts, [`${a.address} name=A weight=3`, `${b.address} name=B weight=1`]);
      const reloaded = nextLine(lila, /lila: SIGHUP: [^\n]*/);
      lila.child.kill('SIGHUP');

      assert.equal((await reloaded).line, 'lila: SIGHUP: reloaded hosts servers=2 added=- removed=- reweighted=A');
      assert.deepEqual(tally(await getMany(lila.port, agent, 40)), { A: 30, B: 10 });
    });

    it('keeps the running servers when the new file is invalid, and reloads a valid one later', async () => {
      const [a, b, c] = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const dir = tempDir();
      const hosts = path.join(dir, 'hosts');
      writeHosts(hosts, [`${a.address} name=A`, `${b.address} name=B`]);
      const lila = await startLila(['round-robin', '--hosts', 'hosts', '-p', '0', '-a', '127.0.0.1'], { cwd: dir });
      const load = startLoad(lila.port);
      await until(() => load.records.length >= 100, '100 requests went through');

      writeHosts(hosts, [`${a.address} name=A`, '# C comes next', 'nonsense', `${c.address} name=C`]);
      const rejected = nextLine(lila, /lila: [^\n]*SIGHUP[^\n]*/);
      lila.child.kill('SIGHUP');
      const { line: error, at: rejectedAt } = await rejected;
      assert.equal(error, 'lila: error: SIGHUP: hosts:3: server "nonsense" needs a port, as in "nonsense:8080"; ' +
        'keeping the 2 running servers');
      await until(() => load.records.filter((r) => r.start > rejectedAt).length >= 100, '100 requests after the bad file');

      writeHosts(hosts, [`${a.address} name=A`, `${c.address} name=C`]);
      const reloaded = nextLine(lila, /lila: [^\n]*SIGHUP[^\n]*/);
      lila.child.kill('SIGHUP');
      const { line, at } = await reloaded;
      assert.equal(line, 'lila: SIGHUP: reloaded hosts servers=2 added=C removed=B reweighted=-');
      await until(() => load.records.filter((r) => r.start > at).length >= 100, '100 requests after the good file');
      await load.stop();

      assert.deepEqual(failures(load.records, ['A', 'B', 'C']), []);
      const between = load.records.filter((r) => r.start > rejectedAt && r.end < at).map((r) => r.result);
      assert.deepEqual(Object.keys(tally(between)).sort(), ['A', 'B']);
      const after = load.records.filter((r) => r.start > at).map((r) => r.result);
      assert.deepEqual(Object.keys(tally(after)).sort(), ['A', 'C']);
    });
  });

  describe('on SIGHUP (tcp)', () => {
    it('keeps a connection to a removed backend working while new connections go to the added one', async () => {
      // Writes its name and a newline, then echoes.
      const echo = (name) => (socket) => {
        socket.write(`${name}\n`);
        socket.pipe(socket);
      };
      const a = await startTcpBackend('A', echo('A'));
      const b = await startTcpBackend('B', echo('B'));
      const dir = tempDir();
      const hosts = path.join(dir, 'hosts');
      writeHosts(hosts, [`${a.address} name=A`]);
      const lila = await startLila(['round-robin', '-l', 'tcp', '--hosts', 'hosts', '-p', '0', '-a', '127.0.0.1'], { cwd: dir });

      const old = connect(lila.port);
      await until(() => old.received === 'A\n', 'the first connection reached A');
      old.socket.write('one ');
      await until(() => old.received === 'A\none ', 'A echoed "one"');

      writeHosts(hosts, [`${b.address} name=B`]);
      const reloaded = nextLine(lila, /lila: SIGHUP: [^\n]*/);
      lila.child.kill('SIGHUP');
      assert.equal((await reloaded).line, 'lila: SIGHUP: reloaded hosts servers=1 added=B removed=A reweighted=-');

      old.socket.write('two');
      await until(() => old.received === 'A\none two', 'A echoed "two" after the reload');
      const fresh = [connect(lila.port), connect(lila.port)];
      await until(() => fresh.every((f) => f.received === 'B\n'), 'new connections reached B');
      assert.equal(a.sockets.size, 1);
      assert.equal(old.closed, false);

      old.socket.end();
      await until(() => old.closed && a.sockets.size === 0, 'the old connection closed on both sides');
      assert.equal(old.error, null);
    });
  });

  describe('balancer.sync', () => {
    it('keeps unchanged backends, their state and counters; replaces moved ones; changes nothing on invalid input', async () => {
      const [a, b, c] = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const proxy = await startProxy({ mode: 'round-robin', servers: [`${a.address},name=A`, `${b.address},name=B`] });
      const agent = keepAliveAgent();
      assert.deepEqual(await getMany(proxy.port, agent, 4), ['A', 'B', 'A', 'B']);
      await until(() => proxy.backends.every((backend) => backend.stats.requests === 2), 'both backends counted 2');
      const [backendA, backendB] = proxy.backends;
      backendB.failures = 1;
      // Backends by identity: the letter of one seen before, else `new <name>`.
      const known = new Map([[backendA, 'A'], [backendB, 'B']]);
      const who = (backends) => backends.map((backend) => known.get(backend) || `new ${backend.name}`);
      const whoChanged = ({ added, removed, reweighted }) => ({ added: who(added), removed: who(removed), reweighted: who(reweighted) });

      const result = proxy.balancer.sync([`${b.address},name=B,weight=2`, `${c.address},name=C`]);

      assert.deepEqual(whoChanged(result), { added: ['new C'], removed: ['A'], reweighted: ['B'] });
      const backendC = result.added[0];
      known.set(backendC, 'C');
      assert.deepEqual(who(proxy.backends), ['B', 'C']);
      assert.deepEqual(
        { name: backendC.name, host: backendC.host, port: backendC.port, weight: backendC.weight },
        { name: 'C', host: '127.0.0.1', port: c.port, weight: 1 }
      );
      assert.equal(backendA.removed, true);
      assert.deepEqual(
        { removed: backendB.removed, weight: backendB.weight, requests: backendB.stats.requests, failures: backendB.failures, state: backendB.state },
        { removed: false, weight: 2, requests: 2, failures: 1, state: 'up' }
      );

      assert.deepEqual(tally(await getMany(proxy.port, agent, 6)), { B: 4, C: 2 });
      await until(() => backendB.stats.requests === 6 && backendC.stats.requests === 2, 'B counted 6 and C 2');
      assert.equal(backendA.stats.requests, 2);

      // The same list again changes nothing.
      const again = proxy.balancer.sync([`${b.address},name=B,weight=2`, `${c.address},name=C`]);
      assert.deepEqual(whoChanged(again), { added: [], removed: [], reweighted: [] });
      assert.deepEqual(who(proxy.backends), ['B', 'C']);

      // A name at another address is another backend.
      const moved = proxy.balancer.sync([`${b.address},name=B,weight=2`, `${a.address},name=C`]);
      assert.deepEqual(whoChanged(moved), { added: ['new C'], removed: ['C'], reweighted: [] });
      assert.equal(moved.added[0].port, a.port);
      known.set(moved.added[0], 'C moved');
      assert.deepEqual(who(proxy.backends), ['B', 'C moved']);

      // All or nothing.
      assert.throws(() => proxy.balancer.sync([`${c.address},name=D`, 'nonsense']), { code: 'LILA_ERR_INVALID_SERVER' });
      assert.throws(() => proxy.balancer.sync([`${c.address},name=D`, `${a.address},name=D`]),
        { code: 'LILA_ERR_INVALID_SERVER' });
      assert.throws(() => proxy.balancer.sync([]), { code: 'LILA_ERR_NO_SERVERS' });
      assert.deepEqual(who(proxy.backends), ['B', 'C moved']);
      assert.equal(backendB.weight, 2);
      assert.deepEqual(tally(await getMany(proxy.port, agent, 3)), { A: 1, B: 2 });
    });
  });

  describe('--watch', () => {
    it('reloads when the file is written, replaced by a rename, and written again', async () => {
      const [a, b, c] = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const dir = tempDir();
      const hosts = path.join(dir, 'hosts');
      writeHosts(hosts, [`${a.address} name=A`, `${b.address} name=B`]);
      const lila = await startLila(['round-robin', '--hosts', 'hosts', '--watch', '-p', '0', '-a', '127.0.0.1'], { cwd: dir });
      assert.equal(lila.line, `lila: round-robin (http) listening on 127.0.0.1:${lila.port} -> 2 servers from hosts (watched)`);
      const agent = keepAliveAgent();
      assert.deepEqual(await getMany(lila.port, agent, 2), ['A', 'B']);

      const steps = [
        {
          what: 'written in place',
          write: () => writeHosts(hosts, [`${a.address} name=A`, `${b.address} name=B`, `${c.address} name=C`]),
          line: 'lila: file changed: reloaded hosts servers=3 added=C removed=- reweighted=-',
          expected: { A: 2, B: 2, C: 2 }
        },
        {
          what: 'replaced by a rename',
          write: () => {
            const next = path.join(dir, 'hosts.next');
            writeHosts(next, [`${b.address} name=B`, `${c.address} name=C`]);
            fs.renameSync(next, hosts);
          },
          line: 'lila: file changed: reloaded hosts servers=2 added=- removed=A reweighted=-',
          expected: { B: 3, C: 3 }
        },
        {
          what: 'written in place after the rename',
          write: () => writeHosts(hosts, [`${b.address} name=B weight=2`, `${c.address} name=C`]),
          line: 'lila: file changed: reloaded hosts servers=2 added=- removed=- reweighted=B',
          expected: { B: 4, C: 2 }
        }
      ];
      for (const { what, write, line, expected } of steps) {
        const reloaded = nextLine(lila, new RegExp(escape(line)));
        const writtenAt = performance.now();
        write();
        const { at } = await reloaded;
        assert.ok(at - writtenAt < 1000, `reloaded ${Math.round(at - writtenAt)} ms after the file was ${what}`);
        assert.deepEqual(tally(await getMany(lila.port, agent, 6)), expected, `after the file was ${what}`);
      }
      assert.doesNotMatch(lila.stderr, /error|warn/);
    });

    it('reloads a file mounted as Kubernetes mounts a ConfigMap, every time its ..data link is swapped', async () => {
      const backends = await Promise.all(['A', 'B', 'C'].map((name) => startHttpBackend(name)));
      const dir = tempDir();
      const mount = kubernetesMount(dir, 'hosts');
      mount.update(`${backends[0].address} name=A\n`);
      const lila = await startLila(['round-robin', '--hosts', path.join(dir, 'hosts'), '--watch', '-p', '0', '-a', '127.0.0.1']);
      const agent = keepAliveAgent();

      for (let i = 1; i <= 20; i++) {
        const backend = backends[i % 3];
        const reloaded = nextLine(lila, /lila: file changed: reloaded \S*hosts servers=1 [^\n]*/);
        mount.update(`${backend.address} name=${backend.name}\n`);
        await reloaded;
        assert.deepEqual(await getMany(lila.port, agent, 2), [backend.name, backend.name], `after update ${i}`);
      }
      assert.equal(lila.stderr.match(/file changed: reloaded/g).length, 20);
    });

    it('does not reload for an event that leaves the file as it was', async () => {
      const a = await startHttpBackend('A');
      const dir = tempDir();
      const hosts = path.join(dir, 'hosts');
      writeHosts(hosts, [`${a.address} name=A`]);
      const lila = await startLila(['round-robin', '--hosts', hosts, '--watch', '-p', '0', '-a', '127.0.0.1']);
      const checked = nextLine(lila, /lila: file changed: reloaded \S*hosts [^\n]*/, 1000);

      // Another file of the directory changes: lila looks at its own, which has not.
      fs.writeFileSync(path.join(dir, 'other'), 'x');
      await assert.rejects(checked, /no line matching/);
    });
  });

  describe('starting', () => {
    it('reads ./hosts when no servers are given', async () => {
      const a = await startHttpBackend('A');
      const b = await startHttpBackend('B');
      const dir = tempDir();
      writeHosts(path.join(dir, 'hosts'), ['# the pool', '', `${a.address} name=A`, `  ${b.address}   name=B  # second`]);

      const lila = await startLila(['round-robin', '-p', '0', '-a', '127.0.0.1'], { cwd: dir });

      assert.equal(lila.line, `lila: round-robin (http) listening on 127.0.0.1:${lila.port} -> 2 servers from hosts`);
      assert.deepEqual(await getMany(lila.port, keepAliveAgent(), 4), ['A', 'B', 'A', 'B']);
    });

    it('ignores ./hosts when servers are on the command line, and only warns on SIGHUP', async () => {
      const a = await startHttpBackend('A');
      const c = await startHttpBackend('C');
      const dir = tempDir();
      writeHosts(path.join(dir, 'hosts'), [`${a.address} name=A`]);

      const lila = await startLila(['round-robin', c.address, '-p', '0', '-a', '127.0.0.1'], { cwd: dir });
      assert.equal(lila.line, `lila: round-robin (http) listening on 127.0.0.1:${lila.port} -> 1 server`);
      const agent = keepAliveAgent();
      assert.deepEqual(await getMany(lila.port, agent, 2), ['C', 'C']);

      const warned = nextLine(lila, /lila: [^\n]*SIGHUP[^\n]*/);
      lila.child.kill('SIGHUP');

      assert.equal((await warned).line, 'lila: warn: SIGHUP received: no hosts file to reload (servers are on the command line)');
      assert.deepEqual(await getMany(lila.port, agent, 2), ['C', 'C']);
      assert.equal(lila.child.exitCode, null);
    });

    const cases = [
      {
        name: 'a line that is not a server',
        file: ['# pool', '127.0.0.1:1 name=A', '', 'nonsense', '127.0.0.1:2'],
        args: ['--hosts', 'my-hosts'],
        line: 'lila: my-hosts:4: server "nonsense" needs a port, as in "nonsense:8080"'
      },
      {
        name: 'an unknown parameter',
        file: ['127.0.0.1:1 weight=2 fast'],
        args: ['--hosts', 'my-hosts'],
        line: 'lila: my-hosts:1: server "127.0.0.1:1,weight=2,fast" has an unknown parameter "fast" (known: weight=N, backup, name=X, maxconn=N, tls, sni=NAME, h2, resolve, send-proxy, send-proxy-v2)'
      },
      {
        name: 'a name used twice',
        file: ['127.0.0.1:1 name=A', '127.0.0.1:2 name=A'],
        args: ['--hosts', 'my-hosts'],
        line: 'lila: my-hosts:2: server "A" is already on line 1'
      },
      {
        name: 'a file without servers',
        file: ['# nothing yet', ''],
        args: ['--hosts', 'my-hosts'],
        line: 'lila: my-hosts: no servers in the file'
      },
      {
        name: 'a missing file',
        file: null,
        args: ['--hosts', 'my-hosts'],
        line: 'lila: cannot read hosts file my-hosts: no such file'
      },
      {
        name: 'a bad ./hosts read by default',
        file: null,
        hosts: ['127.0.0.1:1', '127.0.0.1:http'],
        args: [],
        line: 'lila: hosts:2: server "127.0.0.1:http" has port "http"; a port is an integer between 1 and 65535'
      },
      {
        name: 'servers on the command line and --hosts',
        file: ['127.0.0.1:1'],
        args: ['127.0.0.1:2', '--hosts', 'my-hosts'],
        line: 'lila: give servers on the command line or with "--hosts", not both'
      },
      {
        name: '--watch without a hosts file',
        file: null,
        args: ['127.0.0.1:2', '--watch'],
        line: 'lila: "--watch" follows a hosts file or certificates; give --hosts or --tls-cert'
      }
    ];

    for (const { name, file, hosts, args, line } of cases) {
      it(`exits 2 with one message and a hint for ${name}`, async () => {
        const dir = tempDir();
        if (file !== null) writeHosts(path.join(dir, 'my-hosts'), file);
        if (hosts !== undefined) writeHosts(path.join(dir, 'hosts'), hosts);

        const result = await runLila(['round-robin', ...args, '-p', '0', '-a', '127.0.0.1'], { cwd: dir });

        assert.deepEqual(result.stderr.split('\n'), [line, TRY_HELP, '']);
        assert.equal(result.stdout, '');
        assert.deepEqual({ code: result.code, signal: result.signal }, { code: 2, signal: null });
      });
    }
  });
});

/**
 * A tcp connection that records what it receives, whether it closed, and
 * its error code if any.
 *
 * @param {number} port
 */
function connect(port) {
  const socket = net.connect(port, '127.0.0.1');
  onCleanup(() => socket.destroy());
  const conn = { socket, received: '', closed: false, error: null };
  socket.setEncoding('utf8');
  socket.on('data', (text) => { conn.received += text; });
  socket.on('error', (err) => { conn.error = err.code || err.message; });
  socket.on('close', () => { conn.closed = true; });
  return conn;
}
