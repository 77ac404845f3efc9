'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const https = require('node:https');
const net = require('node:net');
const path = require('node:path');
const tls = require('node:tls');
const { Duplex } = require('node:stream');
const { execFile, spawn } = require('node:child_process');
const { once } = require('node:events');
const { promisify } = require('node:util');
const { Pki } = require('./pki');
const { connectH2, fetchH2 } = require('./h2');
const {
  cleanup,
  onCleanup,
  deferred,
  startHttpBackend,
  startTcpBackend,
  refusingPort,
  request,
  rawExchange,
  until,
  spawnLila,
  nextLine,
  keepAliveAgent,
  collect
} = require('./helpers');

// What lila says once per listener when it listens, as a regular expression's source.
const LISTENING = '^lila: (?:https?|tcp|tcp\\+tls) listening on .*$';

/**
 * Writes `lines` (joined by newlines) to `file`.
 *
 * @param {string} file
 * @param {string[]} lines
 */
function writeConfig(file, lines) {
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

/**
 * Spawns `lila --config FILE` and resolves once it has said, for each of
 * `listeners` listeners, where it listens; rejects with its stderr if it
 * exits first.
 *
 * @param {string} file
 * @param {number} listeners
 * @returns {Promise<ReturnType<typeof spawnLila>>}
 */
async function startConfigured(file, listeners) {
  const lila = spawnLila(['--config', file]);
  await new Promise((resolve, reject) => {
    const onData = () => {
      if ((lila.stderr.match(new RegExp(LISTENING, 'gm')) || []).length < listeners) return;
      lila.child.stderr.removeListener('data', onData);
      resolve();
    };
    lila.child.stderr.on('data', onData);
    lila.closed.then(({ code, signal }) => {
      reject(new Error(`lila --config ${file} exited (code ${code}, signal ${signal}) before it was listening; stderr:\n${lila.stderr}`));
    }, reject);
  });
  return lila;
}

/**
 * Rewrites the config file, sends SIGHUP and resolves with lila's answer
 * (the `reloaded` line, or the error) and when the test saw it.
 *
 * @param {ReturnType<typeof spawnLila>} lila
 * @param {string} file
 * @param {string[]} lines
 * @returns {Promise<{line: string, at: number, sent: number}>}
 */
async function reload(lila, file, lines) {
  writeConfig(file, lines);
  const answered = nextLine(lila, /lila: (?:error: )?SIGHUP: .*/);
  const sent = performance.now();
  lila.child.kill('SIGHUP');
  return { ...(await answered), sent };
}

/**
 * An http backend that answers with its name and remembers the Host of
 * every request, without its port.
 *
 * @param {string} name
 * @returns {Promise<Awaited<ReturnType<typeof startHttpBackend>> & {hosts: string[]}>}
 */
async function namedBackend(name) {
  const hosts = [];
  const backend = await startHttpBackend(name, (req, res) => {
    hosts.push(String(req.headers.host).replace(/:\d+$/, ''));
    req.resume();
    res.end(name);
  });
  return Object.assign(backend, { hosts });
}

// The body of a 200, else `<status> <body>`: one string to compare against names.
function outcome(response) {
  const body = String(response.body);
  return Number(response.status) === 200 ? body : `${response.status} ${body}`;
}

// An HTTP/1.0 or other raw request's answer as `outcome` gives it; the connection ends after it.
async function rawOutcome(port, bytes) {
  const { received } = await rawExchange(port, bytes, 3000);
  const match = /^HTTP\/1\.[01] (\d{3}) [^\r]*\r\n[\s\S]*?\r\n\r\n([\s\S]*)$/.exec(received);
  if (match === null) return `not a response: ${JSON.stringify(received)}`;
  return outcome({ status: match[1], body: match[2] });
}

// One GET over https through lila with a server name and a Host: the body and the certificate's subject.
function httpsGet(port, servername, ca) {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, servername, ca, agent: false, headers: { Host: servername } }, (res) => {
      const cn = res.socket.getPeerCertificate().subject.CN;
      collect(res).then((body) => resolve({ status: res.statusCode, body: body.toString(), cn }), reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * A TLS backend for the tcp layer: completes a handshake with its own
 * certificate, writes `hello from NAME` and closes. With `plain`, a client
 * that does not start with a TLS record gets `plain to NAME: <its first bytes>`.
 *
 * @param {string} name
 * @param {{cert: string, key: string}} certificate
 * @param {{plain?: boolean}} [options]
 * @returns {Promise<{name: string, address: string, connections: number, secured: string[]}>}
 *   secured: the server name of every handshake completed
 */
async function startTlsBackend(name, certificate, options = {}) {
  const secureContext = tls.createSecureContext({ cert: certificate.cert, key: certificate.key });
  const state = { name, connections: 0, secured: [] };
  const sockets = new Set();
  const server = net.createServer((socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.once('data', (chunk) => {
      socket.pause();
      if (chunk[0] !== 0x16 && options.plain === true) {
        socket.end(`plain to ${name}: ${chunk}`);
        return;
      }
      socket.unshift(chunk);
      const secure = new tls.TLSSocket(socket, { isServer: true, secureContext });
      secure.on('error', () => {});
      secure.on('secure', () => {
        state.secured.push(secure.servername || null);
        secure.end(`hello from ${name}\n`);
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return Object.assign(state, { address: `127.0.0.1:${server.address().port}` });
}

/**
 * Runs `openssl s_client` against lila until the server closes, and resolves
 * with what it printed: the certificate's subject and the bytes received.
 *
 * @param {number} port
 * @param {string[]} args e.g. ['-servername', 'a.test']
 * @returns {Promise<string>}
 */
function opensslClient(port, args) {
  const child = spawn('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-ign_eof', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  onCleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
  });
  child.stdin.end();
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (text) => { out += text; });
  child.stderr.resume();
  return once(child, 'close').then(() => out);
}

/**
 * Keeps requests in flight through lila until stopped, each recorded with
 * when it started and ended and its outcome (`outcome()`, or
 * `client error <code>`).
 *
 * @param {number} concurrency
 * @param {() => Promise<{status: number, body: string | Buffer}>} send one request
 * @returns {{records: {start: number, end: number, result: string}[], stop: () => Promise<void>}}
 */
function startLoad(concurrency, send) {
  const records = [];
  let running = true;
  const worker = async () => {
    while (running) {
      const record = { start: performance.now(), end: 0, result: '' };
      try {
        record.result = outcome(await send());
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

function tally(names) {
  const counts = {};
  for (const name of names) counts[name] = (counts[name] || 0) + 1;
  return counts;
}

function noRoute(host, path) {
  return `404 lila: 404 Not Found: no route for host "${host}" and path "${path}"\n`;
}

describe('routing by a config file, end to end', function () {
  this.timeout(30000);
  let pki;
  let dir;
  let file;

  before(() => {
    pki = new Pki();
  });
  after(() => pki.remove());
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(pki.dir, 'routes-'));
    file = path.join(dir, 'lila.conf');
  });
  afterEach(cleanup);

  describe('two sites on one https port, a certificate each', () => {
    let certA;
    let certB;
    let sites;

    before(() => {
      certA = pki.issue({ names: ['a.test'] });
      certB = pki.issue({ names: ['b.test'] });
    });

    beforeEach(async () => {
      const backends = {};
      for (const name of ['A1', 'A2', 'B1', 'B2']) backends[name] = await namedBackend(name);
      const port = await refusingPort();
      writeConfig(file, [
        `pool a round-robin ${backends.A1.address} ${backends.A2.address}`,
        `pool b round-robin ${backends.B1.address} ${backends.B2.address}`,
        `listen 127.0.0.1:${port}`,
        `  --tls-cert ${certA.certFile} --tls-key ${certA.keyFile}`,
        `  --tls-cert ${certB.certFile} --tls-key ${certB.keyFile}`,
        '  route a.test a',
        '  route b.test b'
      ]);
      const lila = await startConfigured(file, 1);
      assert.match(lila.stderr, new RegExp(`^lila: https listening on 127\\.0\\.0\\.1:${port}: 2 routes -> a, b `, 'm'));
      sites = { port, backends };
    });

    // Every request a backend of `names` saw was for `host`, and there was one at least.
    const onlyFor = (names, host) => {
      const hosts = names.flatMap((name) => sites.backends[name].hosts);
      assert.ok(hosts.length > 0, `${names} saw a request`);
      assert.deepEqual([...new Set(hosts)], [host]);
    };

    it('gives a node https client each name\'s certificate and pool', async () => {
      const answers = { 'a.test': [], 'b.test': [] };
      for (let i = 0; i < 4; i++) {
        for (const name of ['a.test', 'b.test']) answers[name].push(await httpsGet(sites.port, name, pki.ca));
      }

      assert.deepEqual(answers['a.test'].map((a) => [a.status, a.cn]), Array(4).fill([200, 'a.test']));
      assert.deepEqual(answers['b.test'].map((a) => [a.status, a.cn]), Array(4).fill([200, 'b.test']));
      assert.deepEqual(tally(answers['a.test'].map((a) => a.body)), { A1: 2, A2: 2 });
      assert.deepEqual(tally(answers['b.test'].map((a) => a.body)), { B1: 2, B2: 2 });
      onlyFor(['A1', 'A2'], 'a.test');
      onlyFor(['B1', 'B2'], 'b.test');
    });

    it('answers curl --resolve --cacert for each name, verified against that name', async () => {
      const bodies = {};
      for (const name of ['a.test', 'b.test']) {
        bodies[name] = [];
        for (let i = 0; i < 2; i++) {
          const { stdout } = await promisify(execFile)('curl', [
            '--silent', '--show-error', '--max-time', '5', '--cacert', pki.caFile,
            '--resolve', `${name}:${sites.port}:127.0.0.1`, `https://${name}:${sites.port}/`
          ]);
          bodies[name].push(stdout);
        }
      }

      assert.deepEqual(bodies, { 'a.test': ['A1', 'A2'], 'b.test': ['B1', 'B2'] });
      onlyFor(['A1', 'A2'], 'a.test');
      onlyFor(['B1', 'B2'], 'b.test');
    });

    it('serves an http2 client on each name, with that name\'s certificate', async () => {
      const seen = {};
      for (const name of ['a.test', 'b.test']) {
        const session = await connectH2(`https://127.0.0.1:${sites.port}`, { ca: pki.ca, servername: name });
        const responses = [];
        for (let i = 0; i < 4; i++) responses.push(outcome(await fetchH2(session, { ':authority': name })));
        seen[name] = { alpn: session.alpnProtocol, cn: session.socket.getPeerCertificate().subject.CN, bodies: tally(responses) };
        session.close();
      }

      assert.deepEqual(seen, {
        'a.test': { alpn: 'h2', cn: 'a.test', bodies: { A1: 2, A2: 2 } },
        'b.test': { alpn: 'h2', cn: 'b.test', bodies: { B1: 2, B2: 2 } }
      });
      onlyFor(['A1', 'A2'], 'a.test');
      onlyFor(['B1', 'B2'], 'b.test');
    });
  });

  describe('the order routes match in', () => {
    for (const engine of ['fast', 'node']) {
      // The node engine is HTTP/1.1 only: h2 is the fast engine's, and tells the two apart.
      const protocols = engine === 'fast' ? 'HTTP/1.1 and h2' : 'HTTP/1.1; h2 refused';
      it(`exact host, longest wildcard, any host; longest path on segments; else 404 (--engine ${engine}, ${protocols})`, async () => {
        const names = ['EXACT', 'WILD', 'DEEPER', 'API', 'V2', 'STATIC', 'ANY'];
        const backends = {};
        for (const name of names) backends[name] = await namedBackend(name);
        const port = await refusingPort();
        writeConfig(file, [
          `--engine ${engine}`,
          ...names.map((name) => `pool ${name.toLowerCase()} round-robin ${backends[name].address}`),
          `listen 127.0.0.1:${port}`,
          '  route * any',
          '  route /static static',
          '  route api.test/api/v2 v2',
          '  route api.test/api api',
          '  route *.deep.test deeper',
          '  route *.test wild',
          '  route a.test exact'
        ]);
        const lila = await startConfigured(file, 1);
        const table = [
          ['a.test', '/', 'EXACT'],
          [`A.Test.:${port}`, '/x', 'EXACT'],
          ['q.test', '/', 'WILD'],
          ['q.test', '/static/app.js', 'WILD'],
          ['deep.test', '/', 'WILD'],
          ['q.deep.test', '/', 'DEEPER'],
          ['r.q.deep.test', '/', 'DEEPER'],
          ['api.test', '/api', 'API'],
          ['api.test', '/api/users?id=1', 'API'],
          ['api.test', '/api/v2', 'V2'],
          ['api.test', '/api/v2/users', 'V2'],
          ['api.test', '/api/v2x', 'API'],
          ['api.test', '/apix', noRoute('api.test', '/apix')],
          // The 404 names the host as routes compare it: no port, lower case.
          [`API.Test:${port}`, '/apix?q=1', noRoute('api.test', '/apix')],
          ['api.test', '/', noRoute('api.test', '/')],
          ['example.com', '/static', 'STATIC'],
          ['example.com', '/static/app.js', 'STATIC'],
          ['example.com', '/staticx', 'ANY'],
          ['example.com', '/', 'ANY']
        ];
        const expected = table.map(([host, path, answer]) => `${host} ${path} -> ${answer}`);
        const agent = keepAliveAgent();

        const logged = nextLine(lila, /lila: warn: 404 for GET \/apix: client 127\.0\.0\.1 \(LILA_ERR_NO_ROUTE\)/);
        const h1 = [];
        for (const [host, path] of table) h1.push(outcome(await request(port, { agent, path, headers: { Host: host } })));
        await logged;
        assert.deepEqual(table.map(([host, path], i) => `${host} ${path} -> ${h1[i]}`), expected);

        if (engine === 'node') {
          await assert.rejects(connectH2(`http://127.0.0.1:${port}`));
          return;
        }
        const session = await connectH2(`http://127.0.0.1:${port}`);
        const h2 = [];
        for (const [host, path] of table) h2.push(outcome(await fetchH2(session, { ':authority': host, ':path': path })));
        assert.deepEqual(table.map(([host, path], i) => `${host} ${path} -> ${h2[i]}`), expected);
      });
    }

    it('takes the host of an absolute-form target over Host, and gives HTTP/1.0 without Host only the routes without a host', async () => {
      const [exact, wild, any] = [await namedBackend('EXACT'), await namedBackend('WILD'), await namedBackend('ANY')];
      const [port, named] = [await refusingPort(), await refusingPort()];
      writeConfig(file, [
        `pool exact round-robin ${exact.address}`,
        `pool wild round-robin ${wild.address}`,
        `pool any round-robin ${any.address}`,
        `listen 127.0.0.1:${port}`,
        '  route a.test exact',
        '  route *.test wild',
        '  route * any',
        `listen 127.0.0.1:${named}`,
        '  route a.test exact',
        '  route *.test wild'
      ]);
      await startConfigured(file, 2);

      const answers = [
        await rawOutcome(port, 'GET http://a.test/x HTTP/1.1\r\nHost: q.test\r\nConnection: close\r\n\r\n'),
        await rawOutcome(port, 'GET http://q.test/x HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n'),
        await rawOutcome(named, 'GET http://api.other/x HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n'),
        await rawOutcome(port, 'GET / HTTP/1.0\r\n\r\n'),
        await rawOutcome(named, 'GET / HTTP/1.0\r\n\r\n')
      ];

      assert.deepEqual(answers, [
        'EXACT',
        'WILD',
        noRoute('api.other', '/x'),
        'ANY',
        noRoute('', '/')
      ]);
      // The backend is told the host the request was routed by.
      assert.deepEqual(exact.hosts, ['a.test']);
    });

    it('answers a gRPC call that no route matches with status 12 (UNIMPLEMENTED)', async () => {
      const a = await namedBackend('A');
      const port = await refusingPort();
      writeConfig(file, [`pool a round-robin ${a.address}`, `listen 127.0.0.1:${port}`, '  route a.test a']);
      await startConfigured(file, 1);
      const session = await connectH2(`http://127.0.0.1:${port}`);

      const response = await fetchH2(session, {
        ':method': 'POST', ':path': '/lila.test.Echo/Unary', ':authority': 'b.test', 'content-type': 'application/grpc', te: 'trailers'
      }, Buffer.from([0, 0, 0, 0, 0]));

      const status = response.trailers === null ? response.headers['grpc-status'] : response.trailers['grpc-status'];
      assert.equal(status, '12');
      assert.deepEqual(a.hosts, []);
    });
  });

  describe('a tcp listener by TLS server name', () => {
    let certs;

    before(() => {
      certs = { a: pki.issue({ names: ['a.test'] }), b: pki.issue({ names: ['b.test'] }), c: pki.issue({ names: ['c.test'] }) };
    });

    it('passes the handshake through unchanged to the pool of the ClientHello\'s name, else to *', async () => {
      const pa = await startTlsBackend('A', certs.a);
      const pb = await startTlsBackend('B', certs.b);
      const pc = await startTlsBackend('C', certs.c, { plain: true });
      const port = await refusingPort();
      writeConfig(file, [
        `pool pa round-robin ${pa.address} --layer tcp`,
        `pool pb round-robin ${pb.address} --layer tcp`,
        `pool pc round-robin ${pc.address} --layer tcp`,
        `listen 127.0.0.1:${port} --layer tcp`,
        '  route a.test pa',
        '  route b.test pb',
        '  route * pc'
      ]);
      const lila = await startConfigured(file, 1);
      assert.match(lila.stderr, new RegExp(`^lila: tcp listening on 127\\.0\\.0\\.1:${port}: 3 routes -> pa, pb, pc `, 'm'));

      const printed = {};
      for (const name of ['a.test', 'b.test']) printed[name] = await opensslClient(port, ['-servername', name, '-CAfile', pki.caFile]);
      printed.none = await opensslClient(port, ['-noservername', '-CAfile', pki.caFile]);
      // Node verifies the name and the chain: the backend's own certificate, its bytes intact.
      const node = tls.connect({ host: '127.0.0.1', port, servername: 'b.test', ca: pki.ca });
      onCleanup(() => node.destroy());
      const [nodeBytes] = await Promise.all([collect(node), once(node, 'secureConnect')]);
      const plain = await rawExchange(port, 'PING\r\n', 3000);

      for (const [name, backend] of [['a.test', 'A'], ['b.test', 'B'], ['none', 'C']]) {
        const cn = name === 'none' ? 'c.test' : name;
        assert.match(printed[name], new RegExp(`^subject=CN ?= ?${cn.replace('.', '\\.')}$`, 'm'), printed[name]);
        assert.match(printed[name], /Verify return code: 0 \(ok\)/);
        assert.match(printed[name], new RegExp(`^hello from ${backend}$`, 'm'));
      }
      assert.equal(nodeBytes.toString(), 'hello from B\n');
      assert.deepEqual(plain, { received: 'plain to C: PING\r\n', closed: true });
      assert.deepEqual([pa.secured, pb.secured, pc.secured], [['a.test'], ['b.test', 'b.test'], [null]]);
      assert.deepEqual([pa.connections, pb.connections, pc.connections], [1, 2, 2]);
    });

    it('routes by the server name of the handshake it terminates with --tls-cert', async () => {
      const echo = (name) => (socket) => {
        socket.on('data', (chunk) => socket.end(`${name} got ${chunk}`));
      };
      const [ta, tb] = [await startTcpBackend('TA', echo('TA')), await startTcpBackend('TB', echo('TB'))];
      const port = await refusingPort();
      writeConfig(file, [
        `pool ta round-robin ${ta.address} --layer tcp`,
        `pool tb round-robin ${tb.address} --layer tcp`,
        `listen 127.0.0.1:${port} --layer tcp`,
        `  --tls-cert ${certs.a.combinedFile}`,
        `  --tls-cert ${certs.b.combinedFile}`,
        '  route a.test ta',
        '  route b.test tb'
      ]);
      await startConfigured(file, 1);

      const answers = {};
      for (const name of ['a.test', 'b.test']) {
        const client = tls.connect({ host: '127.0.0.1', port, servername: name, ca: pki.ca });
        onCleanup(() => client.destroy());
        await once(client, 'secureConnect');
        const cn = client.getPeerCertificate().subject.CN;
        client.write(`hi ${name}`);
        answers[name] = `${cn}: ${await collect(client)}`;
      }

      assert.deepEqual(answers, { 'a.test': 'a.test: TA got hi a.test', 'b.test': 'b.test: TB got hi b.test' });
    });
  });

  describe('a weighted split', () => {
    it('sends 90/10 of 10 000 requests, and the same query id to the same pool every time with --hash-key', async () => {
      const [a, b] = [await namedBackend('A'), await namedBackend('B')];
      const [plain, keyed] = [await refusingPort(), await refusingPort()];
      writeConfig(file, [
        `pool a round-robin ${a.address}`,
        `pool b round-robin ${b.address}`,
        `listen 127.0.0.1:${plain}`,
        '  route * a=90 b=10',
        `listen 127.0.0.1:${keyed}`,
        '  route * a=90 b=10 --hash-key query:id'
      ]);
      await startConfigured(file, 2);

      const agent = keepAliveAgent(50);
      const bodies = [];
      let next = 0;
      await Promise.all(Array.from({ length: 50 }, async () => {
        while (next < 10000) {
          next++;
          bodies.push(outcome(await request(plain, { agent })));
        }
      }));
      const counts = tally(bodies);

      const byId = new Map();
      const keyedAgent = keepAliveAgent(20);
      const ids = Array.from({ length: 200 }, (_, i) => `user-${i}`);
      await Promise.all(Array.from({ length: 20 }, async (_, worker) => {
        for (let i = worker; i < ids.length; i += 20) {
          for (let time = 0; time < 5; time++) {
            const body = outcome(await request(keyed, { agent: keyedAgent, path: `/cart?id=${ids[i]}&n=${time}` }));
            byId.set(ids[i], (byId.get(ids[i]) || new Set()).add(body));
          }
        }
      }));

      assert.equal(counts.A + counts.B, 10000, JSON.stringify(counts));
      assert.ok(Math.abs(counts.B / 10000 - 0.1) <= 0.02, `B took ${counts.B} of 10000`);
      const split = [...byId.values()];
      assert.deepEqual(split.filter((pools) => pools.size !== 1).map((pools) => [...pools]), []);
      const keyedCounts = tally(split.map((pools) => [...pools][0]));
      assert.equal(keyedCounts.A + keyedCounts.B, 200, JSON.stringify(keyedCounts));
      // About 20 of 200 ids; far outside this, the key would not be what decides.
      assert.ok(keyedCounts.B >= 5 && keyedCounts.B <= 45, `B took ${keyedCounts.B} of 200 ids`);
    });
  });

  describe('reloading on SIGHUP', () => {
    it('adds a certificate and a body limit to a running listener without closing it or its connections', async () => {
      const certA = pki.issue({ names: ['a.test'] });
      const certB = pki.issue({ names: ['b.test'] });
      const a = await namedBackend('A');
      const port = await refusingPort();
      const lines = (extra) => [`pool a round-robin ${a.address}`, `listen 127.0.0.1:${port}`,
        `  --tls-cert ${certA.certFile} --tls-key ${certA.keyFile}`, ...extra, '  route * a'];
      writeConfig(file, lines([]));
      const lila = await startConfigured(file, 1);
      // The name is checked below, by the certificate's subject: before the reload, b.test gets a.test's.
      // On the agent, not each request: Node 22 and later pool a request's own checkServerIdentity apart.
      const checkServerIdentity = () => undefined;
      const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: pki.ca, servername: 'a.test', checkServerIdentity });
      onCleanup(() => agent.destroy());
      const get = (servername, body) => new Promise((resolve, reject) => {
        const req = https.request({ host: '127.0.0.1', port, servername, ca: pki.ca, agent: servername === 'a.test' ? agent : false,
          checkServerIdentity: servername === 'a.test' ? undefined : checkServerIdentity,
          method: body === undefined ? 'GET' : 'POST', headers: { Host: servername } }, (res) => {
          // Read while the response is the socket's: a kept-alive socket back in its agent's pool
          // has no peer certificate to show on Node 22 and later.
          const socket = res.socket;
          const cn = socket.getPeerCertificate().subject.CN;
          collect(res).then((data) => resolve({ status: res.statusCode, body: data.toString(), cn, socket }), reject);
        });
        req.on('error', reject);
        req.end(body);
      });
      const before = await get('a.test');
      const withoutB = await get('b.test');

      const { line } = await reload(lila, file, lines([`  --tls-cert ${certB.certFile} --tls-key ${certB.keyFile}`, '  --max-body-size 10']));
      const after = await get('a.test');
      const withB = await get('b.test');
      const tooLarge = await get('b.test', 'x'.repeat(100));

      assert.match(line, /: listeners 1 \(\+0 -0\), pools 1 \(\+0 -0 ~0\), routes 1$/);
      assert.deepEqual([before.cn, withoutB.cn, after.cn, withB.cn], ['a.test', 'a.test', 'a.test', 'b.test']);
      // The kept-alive connection from before the reload served the request after it.
      assert.equal(after.socket, before.socket);
      assert.deepEqual([after.status, withB.status, tooLarge.status], [200, 200, 413]);
    });

    it('fails no request of three loads while routes, pools and weights change 20 times, and moves the traffic each time', async () => {
      const backends = {};
      for (const name of ['A', 'B', 'C', 'D']) backends[name] = await namedBackend(name);
      const port = await refusingPort();
      // Step i: its lines and the backends a request for / may reach under it.
      const step = (i) => {
        const web = i % 3 === 0 ? [backends.A, backends.C] : [backends.A];
        const pools = [
          `pool web round-robin ${web.map((backend) => backend.address).join(' ')} --max-fails ${1 + (Math.floor(i / 4) % 2)}`,
          `pool canary-${i} round-robin ${backends.B.address}`,
          `pool tail round-robin ${backends.D.address}`
        ];
        const routes = [
          ['  route * web', '  route /tail tail'],
          ['  route * canary-' + i, '  route /web web', '  route /tail tail'],
          [`  route * web=${50 + i} canary-${i}=${50 - i}`, '  route /tail tail'],
          ['  route * tail', `  route /web/only web=1 canary-${i}=0`]
        ][i % 4];
        const reach = [web.map((backend) => backend.name), ['B'], [...web.map((backend) => backend.name), 'B'], ['D']][i % 4];
        return { lines: [...pools, `listen 127.0.0.1:${port}`, ...routes], reach: reach.sort() };
      };
      writeConfig(file, step(0).lines);
      const lila = await startConfigured(file, 1);

      const keepAlive = keepAliveAgent(4);
      const session = await connectH2(`http://127.0.0.1:${port}`);
      const loads = {
        'keep-alive': startLoad(4, () => request(port, { agent: keepAlive })),
        close: startLoad(2, () => request(port, { agent: false, headers: { Connection: 'close' } })),
        h2: startLoad(4, () => fetchH2(session))
      };
      const all = () => Object.values(loads).flatMap((load) => load.records);
      // Each window: from when the test saw a configuration in place to the next SIGHUP.
      const windows = [{ from: 0, to: Infinity, reach: step(0).reach }];
      const served = (from) => Object.values(loads).every((load) => load.records.filter((r) => r.start > from).length >= 5);
      await until(() => served(0), 'each load was served under the first configuration');

      for (let i = 1; i <= 20; i++) {
        if (i === 11) {
          // A broken file: what runs stays, the lines that follow name file:line.
          const broken = step(i).lines.map((line) => line.replace(/^pool tail /, 'pool tail-gone '));
          const { line, at, sent } = await reload(lila, file, broken);
          assert.match(line, new RegExp(`^lila: error: SIGHUP: ${file.replace(/[.]/g, '\\.')}:\\d+: route .* names pool "tail", which is not defined .*; keeping the running configuration$`));
          windows.at(-1).to = sent;
          windows.push({ from: at, to: Infinity, reach: windows.at(-1).reach });
          await until(() => served(at), 'each load was served after the broken file');
        }
        const { lines, reach } = step(i);
        const { line, at, sent } = await reload(lila, file, lines);
        assert.match(line, /^lila: SIGHUP: reloaded .*: listeners 1 \(\+0 -0\), pools 3 \(\+1 -1 ~[01]\), routes [23]$/);
        windows.at(-1).to = sent;
        windows.push({ from: at, to: Infinity, reach });
        await until(() => served(at), `each load was served after reload ${i}`);
      }
      await Promise.all(Object.values(loads).map((load) => load.stop()));

      const names = ['A', 'B', 'C', 'D'];
      const failed = Object.entries(loads).flatMap(([kind, load]) => load.records.filter((r) => !names.includes(r.result)).map((r) => `${kind}: ${r.result}`));
      assert.deepEqual(failed, []);
      // Under each configuration, a request that started after the test saw it in place and
      // ended before the next SIGHUP reached only what that configuration routes / to.
      const strays = windows.flatMap((window, i) => {
        const within = all().filter((r) => r.start > window.from && r.end < window.to);
        return within.filter((r) => !window.reach.includes(r.result)).map((r) => `window ${i} (${window.reach}): ${r.result}`);
      });
      assert.deepEqual(strays, []);
      // The last move: from D (step 19) to A (step 20) for every load.
      const last = windows.at(-1);
      for (const [kind, load] of Object.entries(loads)) {
        assert.deepEqual(Object.keys(tally(load.records.filter((r) => r.start > last.from).map((r) => r.result))), ['A'], kind);
        assert.deepEqual(Object.keys(tally(load.records.filter((r) => r.start > windows.at(-2).from && r.end < windows.at(-2).to).map((r) => r.result))), ['D'], kind);
      }
      assert.equal(lila.child.exitCode, null);
    });

    it('lets a request in flight on a removed pool finish with 200, then closes that pool\'s connections', async () => {
      const arrived = deferred();
      const release = deferred();
      let open = 0;
      const slow = await startHttpBackend('S', (req, res) => {
        req.resume();
        arrived.resolve();
        release.promise.then(() => res.end('S slow'));
      });
      slow.on('connection', (socket) => {
        open++;
        socket.on('close', () => open--);
      });
      const fresh = await namedBackend('N');
      const port = await refusingPort();
      writeConfig(file, [`pool old round-robin ${slow.address}`, `listen 127.0.0.1:${port}`, '  route * old']);
      const lila = await startConfigured(file, 1);

      const inFlight = request(port, { agent: false, path: '/slow' });
      await arrived.promise;
      const { line } = await reload(lila, file, [`pool new round-robin ${fresh.address}`, `listen 127.0.0.1:${port}`, '  route * new']);
      assert.equal(line, `lila: SIGHUP: reloaded ${file}: listeners 1 (+0 -0), pools 1 (+1 -1 ~0), routes 1`);
      const after = outcome(await request(port, { agent: false }));
      // The backend is slow: it answers half a second after the pool left.
      setTimeout(release.resolve, 500);
      const answer = await inFlight;

      assert.deepEqual([after, answer.status, answer.body], ['N', 200, 'S slow']);
      await until(() => open === 0, 'the removed pool closed its connections to S');
    });

    it('keeps a pool whose definition did not change, with its connections to the backends', async () => {
      // Answers with its name and the port lila's connection to it comes from.
      const a = await startHttpBackend('A', (req, res) => {
        req.resume();
        res.end(`A via ${req.socket.remotePort}`);
      });
      const c = await namedBackend('C');
      const port = await refusingPort();
      const pools = (maxFails) => [`pool kept round-robin ${a.address} --max-fails ${maxFails}`, `pool other round-robin ${c.address}`];
      writeConfig(file, [...pools(1), `listen 127.0.0.1:${port}`, '  route * kept']);
      const lila = await startConfigured(file, 1);
      const first = outcome(await request(port, { agent: false }));

      // The routes change, the pool does not: the same upstream connection serves.
      const unchanged = await reload(lila, file, [...pools(1), `listen 127.0.0.1:${port}`, '  route * kept', '  route /other other']);
      const second = outcome(await request(port, { agent: false }));
      // Its options change: a new pool, new connections.
      const changed = await reload(lila, file, [...pools(2), `listen 127.0.0.1:${port}`, '  route * kept', '  route /other other']);
      const third = outcome(await request(port, { agent: false }));

      assert.deepEqual([unchanged.line, changed.line], [
        `lila: SIGHUP: reloaded ${file}: listeners 1 (+0 -0), pools 2 (+0 -0 ~0), routes 2`,
        `lila: SIGHUP: reloaded ${file}: listeners 1 (+0 -0), pools 2 (+0 -0 ~1), routes 2`
      ]);
      assert.match(first, /^A via \d+$/);
      assert.equal(second, first);
      assert.notEqual(third, first);
      assert.equal(outcome(await request(port, { agent: false, path: '/other' })), 'C');
    });

    it('goes on with the round-robin of a pool whose definition did not change', async () => {
      const [a, b, c] = [await namedBackend('A'), await namedBackend('B'), await namedBackend('C')];
      const port = await refusingPort();
      const rr = `pool rr round-robin ${a.address} ${b.address}`;
      writeConfig(file, [rr, `pool other round-robin ${c.address}`, `listen 127.0.0.1:${port}`, '  route * rr']);
      const lila = await startConfigured(file, 1);
      const agent = keepAliveAgent();
      const before = outcome(await request(port, { agent }));

      const { line } = await reload(lila, file, [rr, `pool other round-robin ${c.address}`, `listen 127.0.0.1:${port}`, '  route * rr', '  route /other other']);
      assert.equal(line, `lila: SIGHUP: reloaded ${file}: listeners 1 (+0 -0), pools 2 (+0 -0 ~0), routes 2`);
      const after = [];
      for (let i = 0; i < 3; i++) after.push(outcome(await request(port, { agent })));

      assert.deepEqual([before, ...after], ['A', 'B', 'A', 'B']);
    });
  });
});

