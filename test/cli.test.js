'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const net = require('node:net');
const { once } = require('node:events');
const { version } = require('../package.json');
const { configHelpText, helpOfTopic, HELP_TOPICS } = require('../lib/cli/help');
const { PUSH_OPTIONS } = require('../lib/cli/push');
const {
  onCleanup,
  deferred,
  cleanup,
  startHttpBackend,
  startTcpBackend,
  request,
  collect,
  runLila,
  takenPort,
  startLila
} = require('./helpers');

const TRY_HELP = 'Try "lila --help" for more information.';
const STACK_LINE = /^\s+at /m;

describe('lila (command line)', () => {
  afterEach(cleanup);

  describe('bad input', () => {
    const cases = [
      {
        name: 'options but no mode',
        args: ['--port', '80'],
        line: 'lila: no mode given; choose one of round-robin, least-connections, ip-hash, hash, random, p2c, ewma, or a path to a module'
      },
      {
        name: 'an unknown mode',
        args: ['foo', '127.0.0.1:1'],
        line: 'lila: unknown mode "foo" (known modes: round-robin, least-connections, ip-hash, hash, random, p2c, ewma, ' +
          'or a path to a balancer module such as ./my-balancer.js)'
      },
      {
        name: 'no servers',
        args: ['round-robin'],
        line: 'lila: no servers given; list them as host:port after the mode, or in a hosts file (--hosts)'
      },
      {
        name: 'a host without a port',
        args: ['round-robin', 'localhost'],
        line: 'lila: server "localhost" needs a port, as in "localhost:8080"'
      },
      {
        name: 'a port without a host',
        args: ['round-robin', ':80'],
        line: 'lila: server ":80" has no host, as in "localhost:8080"'
      },
      {
        name: 'server port 0',
        args: ['round-robin', 'a:0'],
        line: 'lila: server "a:0" has port "0"; a port is an integer between 1 and 65535'
      },
      {
        name: 'server port 65536',
        args: ['round-robin', 'a:65536'],
        line: 'lila: server "a:65536" has port "65536"; a port is an integer between 1 and 65535'
      },
      {
        name: 'a server port that is not a number',
        args: ['round-robin', 'a:http'],
        line: 'lila: server "a:http" has port "http"; a port is an integer between 1 and 65535'
      },
      {
        name: 'an unknown option after the servers',
        args: ['round-robin', 'a:1', '--bogus'],
        line: 'lila: unknown option "--bogus"'
      },
      {
        name: 'an unknown option before the mode',
        args: ['--bogus', 'round-robin', 'a:1'],
        line: 'lila: unknown option "--bogus"'
      },
      {
        name: 'an unknown --layer',
        args: ['round-robin', 'a:1', '-l', 'sctp'],
        line: 'lila: "--layer" must be "http" or "tcp" or "udp", received "sctp"'
      },
      {
        name: '--port without a value',
        args: ['round-robin', 'a:1', '--port'],
        line: 'lila: "--port" needs a value'
      },
      {
        name: '--port abc',
        args: ['round-robin', 'a:1', '--port', 'abc'],
        line: 'lila: "--port" must be an integer between 0 and 65535, received "abc"'
      },
      {
        name: '--port 70000',
        args: ['round-robin', 'a:1', '--port', '70000'],
        line: 'lila: "--port" must be an integer between 0 and 65535, received "70000"'
      },
      {
        name: 'a weight that is not a number',
        args: ['round-robin', 'a:1,weight=x'],
        line: 'lila: server "a:1,weight=x" has weight "x"; a weight is an integer between 0 and 1000'
      },
      {
        name: 'a weight above 1000',
        args: ['round-robin', 'a:1,weight=1001'],
        line: 'lila: server "a:1,weight=1001" has weight "1001"; a weight is an integer between 0 and 1000'
      },
      {
        name: 'an unknown server parameter',
        args: ['round-robin', 'a:1,foo'],
        line: 'lila: server "a:1,foo" has an unknown parameter "foo" (known: weight=N, backup, name=X, maxconn=N, tls, sni=NAME, h2, resolve, send-proxy, send-proxy-v2)'
      },
      {
        name: 'a server with a scheme',
        args: ['round-robin', 'http://a:1'],
        line: 'lila: server "http://a:1" must not have a scheme; give host:port'
      },
      {
        name: 'an IPv6 server without brackets',
        args: ['round-robin', '::1:80'],
        line: 'lila: server "::1:80" has an IPv6 address without brackets; write it as "[addr]:port"'
      },
      {
        name: 'a server that looks like an option after "--"',
        args: ['round-robin', '--', '--weird'],
        line: 'lila: server "--weird" has an invalid host "--weird"'
      },
      {
        name: 'an empty --address',
        args: ['round-robin', 'a:1', '-a', ''],
        line: 'lila: "--address" must not be empty'
      },
      {
        name: 'a --timeout with an unknown unit',
        args: ['round-robin', 'a:1', '--timeout', '30x'],
        line: 'lila: "--timeout" must be a duration such as 500ms, 5s or 2m, or a number of milliseconds (at most 24 days), received "30x"'
      },
      {
        name: 'a --connect-timeout of 0',
        args: ['round-robin', 'a:1', '--connect-timeout', '0'],
        line: 'lila: "--connect-timeout" must be a duration such as 500ms, 5s or 2m, or a number of milliseconds (at most 24 days), received "0"'
      },
      {
        name: 'a --header-timeout in days',
        args: ['round-robin', 'a:1', '--header-timeout', '2d'],
        line: 'lila: "--header-timeout" must be a duration such as 500ms, 5s or 2m, or a number of milliseconds (at most 24 days), received "2d"'
      },
      {
        name: 'a negative --keepalive-timeout',
        args: ['round-robin', 'a:1', '--keepalive-timeout=-1s'],
        line: 'lila: "--keepalive-timeout" must be 0 (off) or a duration such as 500ms, 5s or 2m, or a number of milliseconds (at most 24 days), received "-1s"'
      },
      {
        name: 'an unknown --host-header',
        args: ['round-robin', 'a:1', '--host-header', 'upstream'],
        line: 'lila: "--host-header" must be "client" or "backend", received "upstream"'
      },
      {
        name: 'an unknown --engine',
        args: ['round-robin', 'a:1', '--engine', 'turbo'],
        line: 'lila: "--engine" must be "fast" or "node", received "turbo"'
      },
      {
        name: 'a --max-header-size below 1024',
        args: ['round-robin', 'a:1', '--max-header-size', '100'],
        line: 'lila: "--max-header-size" must be an integer of 1024 or more, received "100"'
      },
      {
        name: 'a server listed twice',
        args: ['round-robin', 'a:1', '127.0.0.1:2', 'a:1'],
        line: 'lila: server "a:1" is listed twice'
      },
      {
        name: 'a mistyped option',
        args: ['round-robin', 'a:1', '--strip-prefx'],
        line: 'lila: unknown option "--strip-prefx"; did you mean --strip-prefix?'
      },
      {
        name: 'a mistyped option given a value with "="',
        args: ['round-robin', 'a:1', '--helth-path=/up'],
        line: 'lila: unknown option "--helth-path"; did you mean --health-path?'
      },
      {
        name: 'a mistyped option of several words',
        args: ['round-robin', 'a:1', '--respnd', '200', 'ok'],
        line: 'lila: unknown option "--respnd"; did you mean --respond?'
      },
      {
        name: 'a mistyped mode',
        args: ['round-robbin', 'a:1'],
        line: 'lila: unknown mode "round-robbin"; did you mean round-robin?'
      },
      {
        name: 'a mode in capitals',
        args: ['P2C', 'a:1'],
        line: 'lila: unknown mode "P2C"; did you mean p2c?'
      },
      {
        name: 'a mistyped mode after -t',
        args: ['-e', 'a:1', '-t', 'ip-hsah'],
        line: 'lila: unknown mode "ip-hsah"; did you mean ip-hash?'
      },
      {
        name: 'a long option with one dash',
        args: ['-port', '32095', 'round-robin', 'a:1'],
        line: 'lila: "-port" is not an option: long options take two dashes, as in --port'
      },
      {
        name: 'a long option with one dash and "="',
        args: ['round-robin', 'a:1', '-timeout=5s'],
        line: 'lila: "-timeout" is not an option: long options take two dashes, as in --timeout'
      },
      {
        name: 'a long option with one dash that -t would read as its value',
        args: ['round-robin', 'a:1', '-tls-cert', 'site.pem'],
        line: 'lila: "-tls-cert" is not an option: long options take two dashes, as in --tls-cert'
      },
      {
        name: 'a mistyped long option with one dash',
        args: ['round-robin', 'a:1', '-prot', '80'],
        line: 'lila: "-prot" is not an option: long options take two dashes; did you mean --port?'
      },
      {
        name: 'letters after one dash that are not short options',
        args: ['round-robin', 'a:1', '-xyz'],
        line: 'lila: "-xyz" is not an option: long options take two dashes, and -x is not a short one'
      },
      {
        name: 'help on a topic there is none of',
        args: ['help', 'modes'],
        line: 'lila: no help on "modes": "lila help" shows the options, and knows config, push, hash-password and help'
      },
      {
        name: 'help on a mistyped topic',
        args: ['help', 'confg'],
        line: 'lila: no help on "confg"; did you mean config?'
      }
    ];

    for (const { name, args, line } of cases) {
      it(`exits 2 with one message and a hint for ${name}`, async () => {
        const result = await runLila(args);

        assert.doesNotMatch(result.stderr, STACK_LINE);
        assert.doesNotMatch(result.stderr, /Error:/);
        assert.deepEqual(result.stderr.split('\n'), [line, TRY_HELP, '']);
        assert.equal(result.stdout, '');
        assert.deepEqual({ code: result.code, signal: result.signal }, { code: 2, signal: null });
      });
    }
  });

  describe('listen failures', () => {
    it('exits 1 with one line when the port is in use', async () => {
      const port = await takenPort();

      const result = await runLila(['round-robin', '127.0.0.1:1', '-a', '127.0.0.1', '-p', String(port)]);

      assert.equal(result.stderr, `lila: cannot listen on 127.0.0.1:${port}: address already in use\n`);
      assert.equal(result.stdout, '');
      assert.deepEqual({ code: result.code, signal: result.signal }, { code: 1, signal: null });
    });

    it('exits 1 with one line when the address is not on this machine', async () => {
      // 192.0.2.0/24 is TEST-NET-1 (RFC 5737), never assigned to a real host.
      const result = await runLila(['round-robin', '127.0.0.1:1', '-a', '192.0.2.1', '-p', '0']);

      assert.equal(result.stderr, 'lila: cannot listen on 192.0.2.1:0: address not available on this machine\n');
      assert.equal(result.stdout, '');
      assert.deepEqual({ code: result.code, signal: result.signal }, { code: 1, signal: null });
    });
  });

  describe('help and version', () => {
    for (const flag of ['--help', '-h']) {
      it(`prints the usage on stdout and exits 0 for ${flag}`, async () => {
        const result = await runLila([flag]);

        assert.ok(result.stdout.startsWith('Usage: lila <mode>'), result.stdout);
        const words = [
          '--port', '--address', '--layer', '--help', '--version', 'round-robin', 'least-connections',
          '--connect-timeout', '--timeout', '--keepalive-timeout', '--header-timeout', '--host-header', '--engine', '--max-header-size'
        ];
        for (const word of words) {
          assert.ok(result.stdout.includes(word), `usage does not mention ${word}`);
        }
        assert.equal(result.stderr, '');
        assert.deepEqual({ code: result.code, signal: result.signal }, { code: 0, signal: null });
      });
    }

    for (const args of [['help'], ['round-robin', 'a:1', '--help']]) {
      it(`prints what --help prints for lila ${args.join(' ')}`, async () => {
        const [result, help] = await Promise.all([runLila(args), runLila(['--help'])]);

        assert.equal(result.stdout, help.stdout);
        assert.equal(result.stderr, '');
        assert.deepEqual({ code: result.code, signal: result.signal }, { code: 0, signal: null });
      });
    }

    it('shows the config file in short, and that SIGHUP reloads it', async () => {
      const { stdout } = await runLila(['--help']);

      const section = stdout.slice(stdout.indexOf('\nConfig file:'), stdout.indexOf('\n\n', stdout.indexOf('\nConfig file:') + 1));
      for (const words of ['pool NAME MODE [SERVER ...] [OPTIONS]', 'listen [ADDRESS:]PORT [OPTIONS]', 'route MATCH TARGET [OPTIONS]',
        'HOST[/PATH]', '*.suffix', '* (any', 'a=90 b=10', '[pool]', '[listen]', '[route]', '[global]', 'lila help config']) {
        assert.ok(section.replace(/\s+/g, ' ').includes(words), `the section says ${words}`);
      }
      assert.match(stdout, /^ {2}SIGHUP {11}reload the config file \(or the hosts file\) and the TLS\n/m);
    });

    for (const args of [['help', 'config'], ['--help', 'config'], ['-h', 'config']]) {
      it(`prints the config file's grammar for lila ${args.join(' ')}`, async () => {
        const result = await runLila(args);

        assert.equal(result.stdout, configHelpText());
        assert.equal(result.stderr, '');
        assert.deepEqual({ code: result.code, signal: result.signal }, { code: 0, signal: null });
      });
    }

    // The subcommands `lila` answers before reading a command line (lib/cli/index.js's `args[0] === '...'`).
    const SUBCOMMANDS = [...fs.readFileSync(path.join(__dirname, '..', 'lib', 'cli', 'index.js'), 'utf8').matchAll(/args\[0\] === '([a-z-]+)'/g)]
      .map((match) => match[1]);

    it('names every subcommand in --help\'s usage lines, and has a help for each', async () => {
      const { stdout } = await runLila(['--help']);
      const usage = stdout.slice(0, stdout.indexOf('\n\n'));

      assert.deepEqual([...SUBCOMMANDS].sort(), ['hash-password', 'help', 'push']);
      for (const name of SUBCOMMANDS) {
        assert.match(usage, new RegExp(`^ +lila ${name}\\b`, 'm'), `the usage names lila ${name}`);
        assert.ok(Object.hasOwn(HELP_TOPICS, name), `lila help ${name}`);
      }
    });

    for (const topic of ['push', 'hash-password', 'help']) {
      const ways = [['help', topic], ['--help', topic], ...(topic === 'help' ? [] : [[topic, '--help'], [topic, '-h']])];
      it(`prints the help of ${topic} for ${ways.map((args) => `lila ${args.join(' ')}`).join(', ')}`, async () => {
        const results = await Promise.all(ways.map((args) => runLila(args)));

        for (const result of results) {
          assert.equal(result.stdout, helpOfTopic(topic));
          assert.equal(result.stderr, '');
          assert.deepEqual({ code: result.code, signal: result.signal }, { code: 0, signal: null });
        }
        assert.match(results[0].stdout, new RegExp(`^Usage: lila ${topic} `));
      });
    }

    it('lists in lila push\'s help every option it takes, and its exit codes', () => {
      const text = helpOfTopic('push');

      // --state-dir is taken (a member's command line may be reused as it is) and changes nothing.
      for (const name of [...PUSH_OPTIONS].filter((option) => option !== 'state-dir')) {
        assert.match(text, new RegExp(`^ +--${name}\\b`, 'm'), `--${name}`);
      }
      assert.match(text, /^Exit status:\n {2}0 .*\n {2}1 .*\n {2}2 /m);
    });

    for (const flag of ['--version', '-V']) {
      it(`prints the package version and exits 0 for ${flag}`, async () => {
        const result = await runLila([flag]);

        assert.equal(result.stdout, `${version}\n`);
        assert.equal(result.stderr, '');
        assert.deepEqual({ code: result.code, signal: result.signal }, { code: 0, signal: null });
      });
    }
  });

  describe('starting', () => {
    const orders = [
      {
        name: 'before the mode and after the servers',
        args: (a, b) => ['--layer', 'tcp', '-a', '127.0.0.1', 'round-robin', a, b, '-p', '0']
      },
      {
        name: 'all after the servers',
        args: (a, b) => ['round-robin', a, b, '-l', 'tcp', '-p', '0', '-a', '127.0.0.1']
      }
    ];

    for (const { name, args } of orders) {
      it(`accepts options ${name}`, async () => {
        const a = await startTcpBackend('A');
        const b = await startTcpBackend('B');

        const lila = await startLila(args(a.address, b.address));

        assert.equal(lila.mode, 'round-robin');
        assert.equal(lila.layer, 'tcp');
        assert.equal(lila.count, 2);
        assert.equal(lila.host, '127.0.0.1');
        const client = net.connect(lila.port, '127.0.0.1');
        onCleanup(() => client.destroy());
        assert.equal((await collect(client)).toString(), 'A');
      });
    }

    it('starts with the lila 1.x command line without resolving names', async () => {
      const lila = await startLila([
        'round-robin', 'localhost:1337', 'example.com:80', '127.0.0.1:7777', '-a', '127.0.0.1', '-p', '0'
      ]);

      assert.match(lila.line, /^lila: round-robin \(http\) listening on 127\.0\.0\.1:\d+ -> 3 servers$/);
    });

    it('passes the http options to the proxy', async () => {
      const a = await startHttpBackend('A', (req, res) => {
        if (req.url === '/host') res.end(req.headers.host);
        // Anything else is never answered.
      });

      const lila = await startLila([
        'round-robin', a.address, '-a', '127.0.0.1', '-p', '0',
        '--timeout', '200ms', '--host-header', 'backend', '--keepalive-timeout', '0', '--connect-timeout', '1s'
      ]);

      const host = await request(lila.port, { agent: false, path: '/host' });
      assert.equal(host.body, a.address);
      assert.equal(host.headers.connection, 'close');
      assert.equal((await request(lila.port, { agent: false, path: '/silent' })).status, 504);
    });

    it('reads a duration without a unit as milliseconds', async () => {
      const a = await startHttpBackend('A', () => {
        // Never answered.
      });

      const lila = await startLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0', '--timeout', '200']);

      const started = performance.now();
      const response = await request(lila.port, { agent: false });
      const elapsed = performance.now() - started;
      assert.equal(response.status, 504);
      assert.ok(elapsed >= 190 && elapsed < 2000, `504 after ${elapsed} ms, not ~200 ms`);
    });

    for (const engine of ['fast', 'node']) {
      it(`takes --engine ${engine} and refuses a head over --max-header-size with 431`, async () => {
        const a = await startHttpBackend('A');

        const lila = await startLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0', '--engine', engine, '--max-header-size', '2048']);

        const small = await request(lila.port, { agent: false, headers: { 'X-Fill': 'x'.repeat(1000) } });
        const large = await request(lila.port, { agent: false, headers: { 'X-Fill': 'x'.repeat(3000) } });
        assert.equal(small.body, 'A');
        assert.equal(large.status, 431);
      });
    }

    it('listens on port 4444 by default', async () => {
      const a = await startHttpBackend('A');

      const lila = await startLila(['round-robin', a.address, '-a', '127.0.0.1']);

      assert.equal(lila.line, 'lila: round-robin (http) listening on 127.0.0.1:4444 -> 1 server');
      const response = await request(4444, { agent: false });
      assert.equal(response.status, 200);
      assert.equal(response.body, 'A');
    });
  });

  describe('stopping', () => {
    for (const signal of ['SIGTERM', 'SIGINT']) {
      it(`exits 0 on ${signal} and frees the port`, async () => {
        const a = await startHttpBackend('A');
        const lila = await startLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0']);

        // At once after the startup line: the handlers must already be there.
        lila.child.kill(signal);
        const { code, signal: killedBy } = await lila.closed;

        assert.deepEqual({ code, signal: killedBy }, { code: 0, signal: null });
        assert.equal(lila.stderr, `${lila.line}\nlila: ${signal} received, draining for up to 10000 ms\n` +
          'lila: stopped: every request and connection finished\n');
        const again = net.createServer();
        again.listen(lila.port, '127.0.0.1');
        onCleanup(() => new Promise((resolve) => again.close(resolve)));
        await once(again, 'listening');
      });
    }
  });

  describe('misbehaving clients', () => {
    it('keeps running after a bad request and a reset mid-request', async () => {
      const upload = deferred();
      const a = await startHttpBackend('A', (req, res) => {
        if (req.method === 'POST') {
          // Expected: lila cuts this upload when its client resets.
          req.on('error', () => {});
          req.once('data', () => upload.resolve(req));
          return;
        }
        req.resume();
        res.end('A');
      });
      const lila = await startLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0']);

      const garbage = net.connect(lila.port, '127.0.0.1');
      onCleanup(() => garbage.destroy());
      garbage.write('NOT HTTP\r\n\r\n');
      const answer = (await collect(garbage)).toString();
      assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/);

      const cut = net.connect(lila.port, '127.0.0.1');
      onCleanup(() => cut.destroy());
      cut.write('POST / HTTP/1.1\r\nHost: lila\r\nContent-Length: 100\r\n\r\n' + 'x'.repeat(50));
      const upstream = await upload.promise;
      const upstreamClosed = new Promise((resolve) => upstream.once('close', resolve));
      cut.resetAndDestroy();
      await upstreamClosed;
      assert.equal(upstream.complete, false);

      const response = await request(lila.port, { agent: false }).catch((err) => {
        throw new Error(`GET through lila failed with ${err.code || err.message}; lila's stderr:\n${lila.stderr}`);
      });
      assert.equal(response.status, 200);
      assert.equal(response.body, 'A');
      assert.deepEqual({ code: lila.child.exitCode, signal: lila.child.signalCode }, { code: null, signal: null });
      assert.doesNotMatch(lila.stderr, STACK_LINE);
    });
  });
});
