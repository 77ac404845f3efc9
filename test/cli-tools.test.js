'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Writable } = require('node:stream');
const { Logger } = require('../lib');
const { parseCommandLine } = require('../lib/cli');
const { usageText } = require('../lib/cli/help');
const {
  onCleanup,
  cleanup,
  startHttpBackend,
  startTcpBackend,
  refusingPort,
  rawRequest,
  request,
  startProxy,
  spawnLila,
  runLila,
  nextLine
} = require('./helpers');

const TRY_HELP = 'Try "lila --help" for more information.';
// The startup line of another tool's command line, text or JSON.
const TOOL_LINE = /^(?:lila: |\{.*"msg":")(\S+) command line: (\S+) \((\S+)\) listening on (\S+) -> (\d+) servers?[^\n]*\n/m;

/**
 * Starts lila with another tool's command line and resolves once its startup
 * line is out; rejects, with what it printed, if it exits first.
 *
 * @param {string[]} args
 * @param {{cwd?: string}} [options]
 */
async function startTool(args, options) {
  const lila = spawnLila(args, options);
  await new Promise((resolve, reject) => {
    const onData = () => {
      if (!TOOL_LINE.test(lila.stderr)) return;
      lila.child.stderr.removeListener('data', onData);
      resolve();
    };
    lila.child.stderr.on('data', onData);
    lila.closed.then(({ code, signal }) => {
      reject(new Error(`lila ${args.join(' ')} exited (code ${code}, signal ${signal}) before it was listening; stderr:\n${lila.stderr}`));
    }, reject);
  });
  const [line, tool, mode, layer, where] = TOOL_LINE.exec(lila.stderr);
  return Object.assign(lila, { line: line.slice(0, -1), tool, mode, layer, port: Number(where.slice(where.lastIndexOf(':') + 1)) });
}

/** A new empty folder, removed on cleanup. */
function tempFolder() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-tools-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** What tcp connections one after the other get from lila: the name of each one's backend. */
async function names(port, count) {
  const out = [];
  for (let i = 0; i < count; i++) out.push(await rawRequest(port, ''));
  return out;
}

describe('command lines of the tools lila replaces', () => {
  afterEach(cleanup);

  describe('equilibrio', () => {
    const parsed = [
      {
        args: ['-e', 'localhost:8080', '-e', 'localhost:8081', '--type', 'round-robin'],
        expected: { mode: 'round-robin', layer: 'tcp', port: 9080, host: undefined, servers: ['localhost:8080', 'localhost:8081'] }
      },
      {
        args: ['-e', 'localhost:8080', '-e', 'localhost:8081', '--type', 'ip-hash'],
        expected: { mode: 'ip-hash', layer: 'tcp', port: 9080, host: undefined, servers: ['localhost:8080', 'localhost:8081'] }
      },
      {
        args: ['-e', 'a:1'],
        expected: { mode: 'round-robin', layer: 'tcp', port: 9080, host: undefined, servers: ['a:1'] }
      },
      {
        args: ['--endpoint', 'a:1', '-t', 'ip-hash', '-l', 'layer4', '-a', '127.0.0.1', '-p', '9000'],
        expected: { mode: 'ip-hash', layer: 'tcp', port: 9000, host: '127.0.0.1', servers: ['a:1'] }
      },
      {
        args: ['-e', 'a:1', '--layer', 'layer7', '--bind-address', '::1', '--bind-port', '0'],
        expected: { mode: 'round-robin', layer: 'http', port: 0, host: '::1', servers: ['a:1'] }
      },
      {
        args: ['-e', 'a:1', '--layer', 'http', '--type', 'least-connections'],
        expected: { mode: 'least-connections', layer: 'http', port: 9080, host: undefined, servers: ['a:1'] }
      }
    ];

    for (const { args, expected } of parsed) {
      it(`reads "lila ${args.join(' ')}" with equilibrio's defaults`, () => {
        const { tool, service } = parseCommandLine(args, {});

        assert.equal(tool, 'equilibrio');
        const { mode, layer, servers } = service.proxy;
        assert.deepEqual({ mode, layer, port: service.port, host: service.host, servers }, expected);
      });
    }

    it('takes its log format and levels', () => {
      for (const level of ['trace', 'debug', 'info', 'warn', 'error']) {
        const { logger } = parseCommandLine(['-e', 'a:1', '--log-format', 'json', '--log-level', level], {});
        assert.deepEqual(logger, { format: 'json', level, access: false });
      }
    });

    it('leaves lila\'s own command lines as they were: layer4 and layer7, --bind-port are only other names', () => {
      const { tool, service } = parseCommandLine(['round-robin', 'a:1', '-l', 'layer4', '--bind-port', '5000'], {});

      assert.equal(tool, undefined);
      assert.deepEqual({ layer: service.proxy.layer, port: service.port }, { layer: 'tcp', port: 5000 });
      assert.equal(parseCommandLine(['round-robin', 'a:1'], {}).service.port, undefined);
    });

    const mistakes = [
      {
        name: '-e and servers after a mode',
        args: ['round-robin', 'a:1', '-e', 'b:2'],
        line: 'lila: give the servers with -e (equilibrio\'s command line, the mode in --type) or after a mode, not both; received "round-robin" too'
      },
      { name: '-e and --hosts', args: ['-e', 'b:2', '--hosts', 'hosts'], line: 'lila: give the servers with -e or "--hosts", not both' },
      { name: '-e and --config', args: ['-e', 'b:2', '--config', 'lila.conf'], line: 'lila: give the servers with -e or "--config", not both' },
      {
        name: '--type without -e',
        args: ['--type', 'ip-hash', 'a:1'],
        line: 'lila: "--type" is the mode of servers given with -e (equilibrio\'s command line); otherwise the mode comes first: lila ip-hash host:port ...'
      },
      { name: '--port and --bind-port', args: ['-e', 'a:1', '-p', '1', '--bind-port', '2'], line: 'lila: give "--port" or "--bind-port", not both: they are one option' },
      { name: 'an unknown --layer', args: ['-e', 'a:1', '-l', 'layer3'], line: 'lila: "--layer" must be "http" or "tcp" or "udp", received "layer3"' }
    ];

    for (const { name, args, line } of mistakes) {
      it(`exits 2 with one line for ${name}`, async () => {
        const result = await runLila(args);

        assert.deepEqual(result.stderr.split('\n'), [line, TRY_HELP, '']);
        assert.deepEqual({ code: result.code, stdout: result.stdout }, { code: 2, stdout: '' });
      });
    }

    it('balances tcp connections round-robin with "-e localhost:A -e localhost:B --type round-robin"', async () => {
      const a = await startTcpBackend('A');
      const b = await startTcpBackend('B');

      const lila = await startTool(['-e', `localhost:${a.port}`, '-e', `localhost:${b.port}`, '--type', 'round-robin', '-p', '0']);

      assert.equal(lila.line, `lila: equilibrio command line: round-robin (tcp) listening on [::]:${lila.port} -> 2 servers`);
      assert.deepEqual(await names(lila.port, 4), ['A', 'B', 'A', 'B']);
    });

    it('keeps a client on one backend with "--type ip-hash"', async () => {
      const backends = [await startTcpBackend('A'), await startTcpBackend('B'), await startTcpBackend('C')];
      const endpoints = backends.flatMap((backend) => ['-e', `localhost:${backend.port}`]);

      const lila = await startTool([...endpoints, '--type', 'ip-hash', '--bind-port', '0']);

      assert.equal(lila.line, `lila: equilibrio command line: ip-hash (tcp) listening on [::]:${lila.port} -> 3 servers`);
      const got = await names(lila.port, 6);
      assert.ok(['A', 'B', 'C'].includes(got[0]), got[0]);
      assert.deepEqual(got, Array(6).fill(got[0]));
    });
  });

  describe('the Rust TCP load balancer (a port alone)', () => {
    it('balances over tcp to the servers of ./hosts, avoiding one that refuses', async () => {
      const a = await startTcpBackend('A');
      const b = await startTcpBackend('B');
      const refusing = `127.0.0.1:${await refusingPort()}`;
      const dir = tempFolder();
      fs.writeFileSync(path.join(dir, 'hosts'), `${a.address}\n${refusing}\n${b.address}\n`);
      const port = await refusingPort();

      const lila = await startTool([String(port)], { cwd: dir });

      assert.equal(lila.line, `lila: tcp-balancer command line: round-robin (tcp) listening on [::]:${port} -> 3 servers from hosts`);
      const down = nextLine(lila, /lila: warn: backend (\S+) is down: ECONNREFUSED/);
      // The second connection goes to the refusing server, and on to the next; passive health takes it down.
      const got = await names(port, 6);
      assert.equal((await down).line, `lila: warn: backend ${refusing} is down: ECONNREFUSED`);
      assert.deepEqual(got, ['A', 'B', 'A', 'B', 'A', 'B']);
      assert.equal(lila.stderr.split(`backend ${refusing} is down`).length, 2, lila.stderr);
    });

    it('says in one line that ./hosts is missing, and exits 2', async () => {
      const result = await runLila(['7777'], { cwd: tempFolder() });

      assert.equal(result.stderr, 'lila: "lila 7777" alone means round-robin over tcp on port 7777 to the servers of ./hosts, ' +
        'one a line, but ./hosts does not exist\n');
      assert.deepEqual({ code: result.code, stdout: result.stdout }, { code: 2, stdout: '' });
    });

    it('leaves a number that cannot be a port to be an unknown mode, as before', async () => {
      const result = await runLila(['70000'], { cwd: tempFolder() });

      assert.match(result.stderr, /^lila: unknown mode "70000"/);
      assert.equal(result.code, 2);
    });
  });

  describe('lila alone', () => {
    it('prints five lines on how to start, on stderr, and exits 2', async () => {
      const result = await runLila([], { cwd: tempFolder() });

      assert.equal(result.stderr, usageText());
      assert.equal(result.stderr.split('\n').length, 6);
      for (const line of result.stderr.split('\n')) assert.ok(line.length <= 80, line);
      assert.deepEqual({ code: result.code, stdout: result.stdout }, { code: 2, stdout: '' });
    });

    it('still asks for a mode where ./hosts exists', async () => {
      const dir = tempFolder();
      fs.writeFileSync(path.join(dir, 'hosts'), '127.0.0.1:1\n');

      const result = await runLila([], { cwd: dir });

      assert.match(result.stderr, /^lila: no mode given; /);
      assert.equal(result.code, 2);
    });
  });

  describe('--log-level trace', () => {
    it('logs each pick, and the retry after a refused connect (tcp)', async () => {
      const a = await startTcpBackend('A');
      const refusing = `127.0.0.1:${await refusingPort()}`;
      const lila = await startTool(['-e', refusing, '-e', a.address, '-p', '0', '--log-level', 'trace']);

      const pick = nextLine(lila, /lila: trace: pick .*/);
      const retry = nextLine(lila, /lila: trace: retry .*/);
      assert.equal(await rawRequest(lila.port, ''), 'A');

      assert.equal((await pick).line, `lila: trace: pick client=127.0.0.1 backend=${refusing} mode=round-robin`);
      assert.equal((await retry).line, `lila: trace: retry client=127.0.0.1 backend=${a.address} mode=round-robin tried=${refusing}`);
    });

    for (const engine of ['fast', 'node']) {
      it(`logs each pick of an http request (--engine ${engine}), as JSON too`, async () => {
        const a = await startHttpBackend('A');
        const lila = await startTool(['-e', a.address, '-l', 'layer7', '-p', '0', '--engine', engine, '--log-level', 'trace', '--log-format', 'json']);

        const pick = nextLine(lila, /\{.*"level":"trace".*/);
        assert.equal((await request(lila.port, { agent: false })).body, 'A');

        const line = JSON.parse((await pick).line);
        assert.deepEqual({ ...line, time: undefined }, {
          time: undefined, level: 'trace', msg: 'pick', client: '127.0.0.1', backend: a.address, mode: 'round-robin'
        });
      });
    }

    for (const engine of ['fast', 'node']) {
      it(`logs the retry of a request on a new connection when its pooled one was closed under it (--engine ${engine})`, async () => {
        // Answers the first request of a connection, keeping it alive, and drops it at the second.
        const a = await startTcpBackend('A', (socket) => {
          let requests = 0;
          socket.on('data', () => {
            if (++requests > 1) socket.destroy();
            else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\nConnection: keep-alive\r\n\r\nA');
          });
        });
        const lines = [];
        const stream = new Writable({
          write(chunk, encoding, callback) {
            lines.push(...chunk.toString().split('\n').filter(Boolean));
            callback();
          }
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address], logger: new Logger({ level: 'trace', stream }) });

        assert.equal((await request(proxy.port, { agent: false })).body, 'A');
        assert.equal((await request(proxy.port, { agent: false })).body, 'A');

        assert.deepEqual(lines.filter((line) => line.startsWith('lila: trace: ')), [
          `lila: trace: pick client=127.0.0.1 backend=${a.address} mode=round-robin`,
          `lila: trace: pick client=127.0.0.1 backend=${a.address} mode=round-robin`,
          `lila: trace: retry client=127.0.0.1 backend=${a.address} mode=round-robin connection=new`
        ]);
      });
    }

    it('logs no pick and no retry at debug', async () => {
      const a = await startTcpBackend('A');
      const refusing = `127.0.0.1:${await refusingPort()}`;
      const lila = await startTool(['-e', refusing, '-e', a.address, '-p', '0', '--log-level', 'debug', '--access-log']);

      // The connection's access line comes after its pick and its retry.
      const refused = nextLine(lila, /lila: debug: backend \S+: ECONNREFUSED/);
      const access = nextLine(lila, /lila: access .*/);
      assert.equal(await rawRequest(lila.port, ''), 'A');
      await refused;
      await access;

      assert.doesNotMatch(lila.stderr, /trace/);
    });
  });
});
