'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Pki } = require('./pki');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  refusingPort,
  request,
  runLila,
  spawnLila,
  startLila,
  nextLine
} = require('./helpers');

const TRY_HELP = 'Try "lila --help" for more information.';
// What lila says once per listener when it listens, as a regular expression's source.
const LISTENING = '^lila: (?:https?|tcp|tcp\\+tls) listening on .*$';

/**
 * Writes `lines` (joined by newlines) to `dir/name` and returns its path.
 *
 * @param {string} dir
 * @param {string} name
 * @param {string[]} lines
 * @returns {string}
 */
function writeConfig(dir, name, lines) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/**
 * Spawns `lila --config FILE` and resolves once it has said, for each of
 * `listeners` listeners, where it listens; rejects with its stderr if it
 * exits first.
 *
 * @param {string[]} args given to lila
 * @param {number} listeners
 * @param {{cwd?: string}} [options]
 * @returns {Promise<ReturnType<typeof spawnLila>>}
 */
async function startConfigured(args, listeners, options = {}) {
  const lila = spawnLila(args, options);
  await new Promise((resolve, reject) => {
    const onData = () => {
      if ((lila.stderr.match(new RegExp(LISTENING, 'gm')) || []).length < listeners) return;
      lila.child.stderr.removeListener('data', onData);
      resolve();
    };
    lila.child.stderr.on('data', onData);
    lila.closed.then(({ code, signal }) => {
      reject(new Error(`lila ${args.join(' ')} exited (code ${code}, signal ${signal}) before it was listening; stderr:\n${lila.stderr}`));
    }, reject);
  });
  return lila;
}

function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('the config file', function () {
  // Certificates are made with openssl, a few hundred ms each.
  this.timeout(30000);
  let pki;
  let site;
  let dir;

  before(() => {
    pki = new Pki();
    site = pki.issue({ names: ['site.test'] });
  });
  after(() => pki.remove());
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(pki.dir, 'conf-'));
  });
  afterEach(cleanup);

  describe('lila --check', () => {
    it('prints one line per listener and "good" on stdout, and exits 0', async () => {
      const file = writeConfig(dir, 'lila.conf', [
        '# two sites and a database',
        '--log-level debug',
        'pool a round-robin 127.0.0.1:9001 --health-interval 50',
        '  127.0.0.1:9002 weight=3',
        'pool b least-connections',
        '  127.0.0.1:9003',
        '  --max-fails 2',
        'pool db round-robin 127.0.0.1:5432 --layer tcp',
        'listen 127.0.0.1:9100',
        '  route a.test a',
        '  route b.test/api b     # the api',
        '  route * a',
        `listen 9443 --tls-cert ${site.certFile} --tls-key ${site.keyFile}`,
        '  route "*" b',
        'listen 127.0.0.1:5433 --layer tcp',
        '  route * db'
      ]);

      const result = await runLila(['--check', '--config', file]);

      assert.deepEqual(result, {
        code: 0,
        signal: null,
        stdout: [
          'listen 127.0.0.1:9100 http: 3 routes -> a, b',
          'listen :9443 https: 1 route -> b',
          'listen 127.0.0.1:5433 tcp: 1 route -> db',
          `lila: ${file}: good`,
          ''
        ].join('\n'),
        stderr: ''
      });
    });

    it('says kinds https and tcp+tls, and takes -c for --config', async () => {
      const file = writeConfig(dir, 'tls.conf', [
        'pool web round-robin 127.0.0.1:9001',
        'pool db round-robin 127.0.0.1:5432 --layer tcp',
        `listen 127.0.0.1:9443 --tls-cert ${site.combinedFile}`,
        '  route * web',
        'listen 127.0.0.1:5433',
        '  --layer tcp',
        `  --tls-cert ${site.certFile} --tls-key ${site.keyFile}`,
        '  route * db'
      ]);

      const result = await runLila(['-c', file, '--check']);

      assert.equal(result.stdout, [
        'listen 127.0.0.1:9443 https: 1 route -> web',
        'listen 127.0.0.1:5433 tcp+tls: 1 route -> db',
        `lila: ${file}: good`,
        ''
      ].join('\n'));
      assert.equal(result.code, 0);
    });

    it('warns on stderr of a pool that no route uses, naming its line, and still exits 0', async () => {
      const file = writeConfig(dir, 'unused.conf', [
        'pool a round-robin 127.0.0.1:9001',
        'pool spare round-robin 127.0.0.1:9002',
        'listen 127.0.0.1:9100',
        '  route * a'
      ]);

      const result = await runLila(['--check', '--config', file]);

      assert.equal(result.code, 0);
      assert.equal(result.stderr, `lila: warn: ${file}:2: pool "spare" is not used by any route\n`);
      assert.equal(result.stdout, `listen 127.0.0.1:9100 http: 1 route -> a\nlila: ${file}: good\n`);
    });

    it('reads ./lila.conf when given no --config', async () => {
      writeConfig(dir, 'lila.conf', ['pool a round-robin 127.0.0.1:9001', 'listen 127.0.0.1:9100', '  route * a']);

      const result = await runLila(['--check'], { cwd: dir });

      assert.equal(result.stdout, 'listen 127.0.0.1:9100 http: 1 route -> a\nlila: lila.conf: good\n');
      assert.equal(result.code, 0);
    });
  });

  describe('a bad file: exit 2 and one line naming file:line', () => {
    // Pools a and b for the routes; `lines` replace the listener when given whole.
    const POOLS = ['pool a round-robin 127.0.0.1:9001', 'pool b round-robin 127.0.0.1:9002'];
    const cases = [
      {
        name: 'a route to a pool that is not defined, listing the pools',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route a.test a', '  route * nope'],
        line: 5,
        message: 'route "*" names pool "nope", which is not defined (pools: a, b)'
      },
      {
        name: 'a weighted split naming a pool that is not defined',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route * a=90 canary=10'],
        line: 4,
        message: 'route "*" names pool "canary", which is not defined (pools: a, b)'
      },
      {
        name: 'a pool defined twice',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route * a', 'pool a round-robin 127.0.0.1:9003'],
        line: 5,
        message: 'pool "a" is already defined on line 1'
      },
      {
        name: 'a route given twice, however its host is written',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route a.test/api a', '', '  route A.Test./api b'],
        line: 6,
        message: 'route "A.Test./api" is already on line 4'
      },
      {
        name: 'two listeners on one port',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route * a', 'listen 9100', '  route * b'],
        line: 5,
        message: 'listen 9100: that port is already listened on, line 3'
      },
      {
        name: 'a listener option on a pool line',
        lines: () => ['pool a round-robin 127.0.0.1:9001 --max-body-size 10m', 'listen 127.0.0.1:9100', '  route * a'],
        line: 1,
        message: '"--max-body-size" belongs on a listen line, not on a pool'
      },
      {
        name: 'a listener option on a pool\'s indented line',
        lines: () => ['pool a round-robin', '  127.0.0.1:9001', '  --tls-cert x.pem', 'listen 127.0.0.1:9100', '  route * a'],
        line: 3,
        message: '"--tls-cert" belongs on a listen line, not on a pool'
      },
      {
        name: 'a pool option on a listen line',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100 --health-interval 100', '  route * a', '  route b.test b'],
        line: 3,
        message: '"--health-interval" belongs on a pool, not on a listen line'
      },
      {
        name: 'a pool option on a listener\'s indented line',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route * a', '  --max-fails 3', '  route b.test b'],
        line: 5,
        message: '"--max-fails" belongs on a pool, not on a listen line'
      },
      {
        name: 'a listener option on a line of its own',
        lines: () => ['--accept-proxy', ...POOLS, 'listen 127.0.0.1:9100', '  route * a', '  route b.test b'],
        line: 1,
        message: '"--accept-proxy" belongs on a listen line, not on a line of its own'
      },
      {
        name: 'a pool option on a line of its own',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route * a', '  route b.test b', '--timeout 5s'],
        line: 6,
        message: '"--timeout" belongs on a pool, not on a line of its own'
      },
      {
        name: 'a pool option on a route',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route * a --max-fails 2', '  route b.test b'],
        line: 4,
        message: '"--max-fails" belongs on a pool, not on a route'
      },
      {
        name: 'a server line with a port out of range',
        lines: () => ['pool a round-robin', '  127.0.0.1:9001', '  127.0.0.1:99999', 'listen 127.0.0.1:9100', '  route * a'],
        line: 3,
        message: 'pool "a": server "127.0.0.1:99999" has port "99999"; a port is an integer between 1 and 65535'
      },
      {
        name: 'a server line with a bad weight',
        lines: () => ['pool a round-robin', '  127.0.0.1:9001 weight=heavy', 'listen 127.0.0.1:9100', '  route * a'],
        line: 2,
        message: /^pool "a": server "127\.0\.0\.1:9001,weight=heavy" has weight "heavy"; a weight is an integer between 0 and \d+$/
      },
      {
        name: 'a server given twice in a pool',
        lines: () => ['pool a round-robin 127.0.0.1:9001', '  127.0.0.1:9002', '  127.0.0.1:9001', 'listen 127.0.0.1:9100', '  route * a'],
        line: 3,
        message: 'pool "a": server "127.0.0.1:9001" is already on line 1'
      },
      {
        name: 'a pool without servers',
        lines: () => ['pool a round-robin', 'listen 127.0.0.1:9100', '  route * a'],
        line: 1,
        message: 'pool "a" has no server: give them after the mode, or one a line below it'
      },
      {
        name: 'a route match with a port',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route a.test:80 a'],
        line: 4,
        message: 'route match "a.test:80": host "a.test:80" has a port: routes match the host name only'
      },
      {
        name: 'a route match that is no host name',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route * a', '  route a..test b'],
        line: 5,
        message: 'route match "a..test": host "a..test" is not a DNS name, *.name, * or an IP address (IPv6 in brackets)'
      },
      {
        name: 'a route path with a query',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route a.test/api?v=2 a'],
        line: 4,
        message: 'route match "a.test/api?v=2": path "/api?v=2" must start with "/" and hold no "?", "#", spaces or control characters'
      },
      {
        name: 'a route without a pool',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route a.test'],
        line: 4,
        message: 'a route names what it matches and its pool: route MATCH POOL (or answers itself: --redirect, --respond, --root)'
      },
      {
        name: 'a split with a target without a weight',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route * a=90 b'],
        line: 4,
        message: 'route "*": a split gives every pool a weight (api=90 canary=10), received "b"'
      },
      {
        name: 'a tcp pool on an http listener',
        lines: () => ['pool a round-robin 127.0.0.1:9001', 'pool db round-robin 127.0.0.1:5432 --layer tcp', 'listen 127.0.0.1:9100', '  route a.test a', '  route * db'],
        line: 5,
        message: /^route "\*" names pool "db", a tcp pool, on an http listener/
      },
      {
        name: 'an http pool on a tcp listener',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100 --layer tcp', '  route * a'],
        line: 4,
        message: /^route "\*" names pool "a", a http pool, on a tcp listener/
      },
      {
        name: 'an unterminated quote',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route "a.test a'],
        line: 4,
        message: 'the quote opened here is not closed'
      },
      {
        name: 'a listen line without routes',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route * a', 'listen 127.0.0.1:9101'],
        line: 5,
        message: 'listen 127.0.0.1:9101 has no route: add "  route * POOL" below it'
      },
      {
        name: 'a line lila does not know',
        lines: () => [...POOLS, 'server 127.0.0.1:9100'],
        line: 3,
        message: '"server" is not a line lila knows: pool, listen, or an option (--admin ...)'
      },
      {
        name: 'a mistyped line, naming the one meant',
        lines: () => [...POOLS, 'lisen 127.0.0.1:9100', '  route * a'],
        line: 3,
        message: '"lisen" is not a line lila knows: pool, listen, or an option (--admin ...); did you mean listen?'
      },
      {
        name: 'a route line that is not indented, at the route\'s line',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', 'route * a', 'route b.test b'],
        line: 4,
        message: 'route lines are indented under their listen line: "listen PORT", then "  route * a" below it'
      },
      {
        name: 'a route line that is not indented, before any listen line',
        lines: () => [...POOLS, 'route api.test a --strip-prefix --hsts', 'listen 127.0.0.1:9100', '  route * a'],
        line: 3,
        message: 'route lines are indented under their listen line: "listen PORT", then "  route api.test a ..." below it'
      },
      {
        name: 'a route line under a pool',
        lines: () => ['pool a round-robin 127.0.0.1:9001', '  route * a', 'listen 127.0.0.1:9100', '  route * a'],
        line: 2,
        message: 'route lines are indented under their listen line, not a pool: "listen PORT", then "  route * a" below it'
      },
      {
        name: 'a mistyped line under a listen line',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  rute * a'],
        line: 4,
        message: '"rute": under a listen line go route lines (route MATCH POOL) and options; did you mean route?'
      },
      {
        name: 'a route to a mistyped pool, naming the one meant',
        lines: () => ['pool web round-robin 127.0.0.1:9001', 'pool api round-robin 127.0.0.1:9002', 'listen 127.0.0.1:9100', '  route api.test api', '  route * wbe'],
        line: 5,
        message: 'route "*" names pool "wbe", which is not defined; did you mean web?'
      },
      {
        name: 'a weighted split with a mistyped pool',
        lines: () => ['pool web round-robin 127.0.0.1:9001', 'pool canary round-robin 127.0.0.1:9002', 'listen 127.0.0.1:9100', '  route * web=90 canray=10'],
        line: 4,
        message: 'route "*" names pool "canray", which is not defined; did you mean canary?'
      },
      {
        name: 'a mistyped mode',
        lines: () => ['pool a round-robbin 127.0.0.1:9001', 'listen 127.0.0.1:9100', '  route * a'],
        line: 1,
        message: 'unknown mode "round-robbin"; did you mean round-robin?'
      },
      {
        name: 'a mistyped option on a listen line',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100 --max-body-sise 1m', '  route * a', '  route b.test b'],
        line: 3,
        message: 'unknown option "--max-body-sise"; did you mean --max-body-size?'
      },
      {
        name: 'a mistyped option on a route line',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route * a --strip-prefx'],
        line: 4,
        message: 'unknown option "--strip-prefx"; did you mean --strip-prefix?'
      },
      {
        name: 'a long option with one dash',
        lines: () => ['pool a round-robin 127.0.0.1:9001 -max-fails 3', 'listen 127.0.0.1:9100', '  route * a'],
        line: 1,
        message: '"-max-fails" is not an option: long options take two dashes, as in --max-fails'
      },
      {
        name: 'a missing certificate file',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route * a', `listen 127.0.0.1:9443 --tls-cert ${path.join(dir, 'missing.pem')}`, '  route * b'],
        line: 5,
        message: () => `certificate file "${path.join(dir, 'missing.pem')}" cannot be read: no such file`
      },
      {
        name: 'a certificate without its key',
        lines: () => [...POOLS, `listen 127.0.0.1:9443 --tls-cert ${site.certFile}`, '  route * a', '  route b.test b'],
        line: 3,
        message: () => `certificate file "${site.certFile}" has no private key: give its key with --tls-key, or a PEM that holds both`
      }
    ];

    for (const { name, lines, line, message } of cases) {
      it(`for ${name}`, async () => {
        const file = writeConfig(dir, 'bad.conf', lines());

        const result = await runLila(['--check', '--config', file]);

        const [first, ...rest] = result.stderr.split('\n');
        const expected = typeof message === 'function' ? message() : message;
        const prefix = `lila: ${file}:${line}: `;
        assert.ok(first.startsWith(prefix), `${JSON.stringify(first)} starts with ${JSON.stringify(prefix)}`);
        if (expected instanceof RegExp) assert.match(first.slice(prefix.length), expected);
        else if (expected !== undefined) assert.equal(first.slice(prefix.length), expected);
        // One line about the file, naming it: nothing else.
        assert.deepEqual(rest.filter((text) => text !== ''), []);
        assert.deepEqual([result.code, result.stdout], [2, '']);
      });
    }

    // Mistakes on an indented line, or found once a route is built, name that line.
    const lineOfTheMistake = [
      {
        // A tcp listener matches only the server name: a path there could never match.
        name: 'a path on a route of a tcp listener, which routes by server name only',
        lines: () => ['pool db round-robin 127.0.0.1:5432 --layer tcp', 'listen 127.0.0.1:5433 --layer tcp', '  route db.test/x db', '  route * db'],
        line: 3
      },
      {
        name: 'a bad value on a pool\'s indented option line, at that line',
        lines: () => ['pool a round-robin', '  127.0.0.1:9001', '  --max-fails many', 'listen 127.0.0.1:9100', '  route * a'],
        line: 3
      },
      {
        name: 'a missing certificate file on a listener\'s indented option line, at that line',
        lines: () => ['pool a round-robin 127.0.0.1:9001', 'listen 127.0.0.1:9443', '  route * a', `  --tls-cert ${path.join(dir, 'missing.pem')}`],
        line: 4
      },
      {
        name: 'a bad --hash-key on a route, at the route\'s line',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route a.test a', '  route * a=90 b=10 --hash-key query:'],
        line: 5
      },
      {
        name: 'a split naming one pool twice, at the route\'s line',
        lines: () => [...POOLS, 'listen 127.0.0.1:9100', '  route b.test b', '  route * a=90 a=10'],
        line: 5
      }
    ];

    for (const { name, lines, line } of lineOfTheMistake) {
      it(`for ${name}`, async () => {
        const file = writeConfig(dir, 'bad.conf', lines());

        const result = await runLila(['--check', '--config', file]);

        assert.ok(result.stderr.startsWith(`lila: ${file}:${line}: `), result.stderr);
        assert.deepEqual([result.code, result.stdout], [2, '']);
      });
    }

    it('exits 2 for the same file without --check, listening on nothing', async () => {
      const port = await refusingPort();
      const file = writeConfig(dir, 'bad.conf', [...POOLS, `listen 127.0.0.1:${port}`, '  route a.test a', '  route * nope']);

      const result = await runLila(['--config', file]);

      assert.equal(result.stderr.split('\n')[0], `lila: ${file}:5: route "*" names pool "nope", which is not defined (pools: a, b)`);
      assert.equal(result.code, 2);
    });

    it('names a config file that cannot be read', async () => {
      const file = path.join(dir, 'nowhere.conf');

      const result = await runLila(['--check', '--config', file]);

      assert.equal(result.stderr.split('\n')[0], `lila: cannot read config file ${file}: no such file`);
      assert.equal(result.code, 2);
    });
  });

  describe('on the command line', () => {
    const cases = [
      ['a mode and servers', (file) => ['--config', file, 'round-robin', '127.0.0.1:9001'], /^lila: give a mode and servers or "--config", not both/],
      ['a mode alone, after -c', (file) => ['-c', file, 'least-connections'], /^lila: give a mode and servers or "--config", not both/],
      ['--hosts', (file) => ['--config', file, '--hosts', 'hosts'], /^lila: give "--hosts" or "--config", not both/],
      ['a pool option', (file) => ['--config', file, '--health-check'], /^lila: "--health-check" goes in the config file, on a pool line$/],
      ['a listener option', (file) => ['--config', file, '--max-connections', '10'], /^lila: "--max-connections" goes in the config file, on a listen line$/],
      ['--port', (file) => ['--config', file, '--port', '8080'], /^lila: "--port" goes in the config file/]
    ];

    for (const [name, args, line] of cases) {
      it(`refuses --config with ${name}: exit 2`, async () => {
        const file = writeConfig(dir, 'lila.conf', ['pool a round-robin 127.0.0.1:9001', 'listen 127.0.0.1:9100', '  route * a']);

        const result = await runLila(args(file));

        assert.match(result.stderr.split('\n')[0], line);
        assert.deepEqual([result.code, result.stdout], [2, '']);
      });
    }

    it('refuses --check without a config file', async () => {
      const result = await runLila(['--check'], { cwd: dir });

      assert.equal(result.stderr, `lila: "--check" checks a config file; give it with --config\n${TRY_HELP}\n`);
      assert.equal(result.code, 2);
    });

    it('lets a global option on the command line win over the file\'s', async () => {
      const backend = await startHttpBackend('A');
      const port = await refusingPort();
      const file = writeConfig(dir, 'lila.conf', [
        '--log-level error',
        `pool a round-robin ${backend.address}`,
        `listen 127.0.0.1:${port}`,
        '  route * a'
      ]);

      const lila = await startConfigured(['--config', file, '--log-level', 'info'], 1);

      assert.equal(lila.stderr, `lila: http listening on 127.0.0.1:${port}: 1 route -> a (${file})\n`);
    });
  });

  describe('starting', () => {
    it('says per listener where it listens, its kind, its routes\' pools and the file, after the warnings', async () => {
      const [a, b] = [await startHttpBackend('A'), await startHttpBackend('B')];
      const db = await startTcpBackend('DB');
      const ports = [await refusingPort(), await refusingPort(), await refusingPort(), await refusingPort()];
      const file = writeConfig(dir, 'lila.conf', [
        `pool a round-robin ${a.address}`,
        `pool b round-robin ${b.address}`,
        `pool db round-robin ${db.address} --layer tcp`,
        `pool spare round-robin ${b.address}`,
        `listen 127.0.0.1:${ports[0]}`,
        '  route a.test a',
        '  route b.test/api b',
        '  route * a',
        `listen 127.0.0.1:${ports[1]} --tls-cert ${site.combinedFile}`,
        '  route * b',
        `listen 127.0.0.1:${ports[2]} --layer tcp`,
        '  route * db',
        `listen 127.0.0.1:${ports[3]} --layer tcp --tls-cert ${site.combinedFile}`,
        '  route site.test db'
      ]);

      const lila = await startConfigured(['--config', file], 4);

      assert.equal(lila.stderr, [
        `lila: warn: ${file}:4: pool "spare" is not used by any route`,
        `lila: http listening on 127.0.0.1:${ports[0]}: 3 routes -> a, b (${file})`,
        `lila: https listening on 127.0.0.1:${ports[1]}: 1 route -> b (${file})`,
        `lila: tcp listening on 127.0.0.1:${ports[2]}: 1 route -> db (${file})`,
        `lila: tcp+tls listening on 127.0.0.1:${ports[3]}: 1 route -> db (${file})`,
        ''
      ].join('\n'));
      assert.equal((await request(ports[0], { headers: { Host: 'b.test' }, path: '/api/x' })).body, 'B');
      assert.equal((await request(ports[0], { headers: { Host: 'c.test' } })).body, 'A');
    });

    it('shows a listener\'s --redirect-http wherever the listener is shown: --check, the startup line, /status, the access log', async () => {
      const a = await startHttpBackend('A');
      const [port, redirect] = [await refusingPort(), await refusingPort()];
      const file = writeConfig(dir, 'lila.conf', [
        '--admin 127.0.0.1:0 --access-log',
        `pool a round-robin ${a.address}`,
        `listen 127.0.0.1:${port} --tls-cert ${site.combinedFile} --redirect-http 127.0.0.1:${redirect}`,
        '  route * a',
        'listen 127.0.0.1:0',
        '  route /old --redirect https://site.test/new 301'
      ]);

      const check = await runLila(['--check', '--config', file]);
      const lila = await startConfigured(['--config', file], 2);
      const admin = Number(/admin API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lila.stderr)[1]);
      const status = JSON.parse((await request(admin, { path: '/status' })).body);
      const logged = nextLine(lila, /.*method=GET path=\/x.*/);
      const redirected = await request(redirect, { path: '/x', headers: { Host: 'site.test' } });

      assert.deepEqual(check.stdout.split('\n').slice(0, 2), [
        `listen 127.0.0.1:${port} https, redirecting http on 127.0.0.1:${redirect}: 1 route -> a`,
        'listen 127.0.0.1:0 http: 1 route -> no pool (answered by lila)'
      ]);
      assert.match(lila.stderr, new RegExp(`^lila: https listening on 127\\.0\\.0\\.1:${port}, redirecting http on 127\\.0\\.0\\.1:${redirect}: 1 route -> a \\(`, 'm'));
      assert.match(lila.stderr, /^lila: http listening on 127\.0\.0\.1:\d+: 1 route -> no pool \(answered by lila\) \(/m);
      assert.deepEqual(status.listeners.map((listener) => listener.redirect_http), [`127.0.0.1:${redirect}`, undefined]);
      assert.deepEqual([redirected.status, redirected.headers.location], [308, `https://site.test:${port}/x`]);
      assert.match((await logged).line, / status=308 route=- pool=- backend=- /);
    });

    it('reads ./lila.conf when run with no arguments in a directory that has one', async () => {
      const a = await startHttpBackend('A');
      const port = await refusingPort();
      writeConfig(dir, 'lila.conf', [`pool a round-robin ${a.address}`, `listen 127.0.0.1:${port}`, '  route * a']);

      const lila = await startConfigured([], 1, { cwd: dir });

      assert.equal(lila.stderr, `lila: http listening on 127.0.0.1:${port}: 1 route -> a (lila.conf)\n`);
      assert.equal((await request(port)).body, 'A');
    });

    it('does not read ./lila.conf when given a mode and servers', async () => {
      const a = await startHttpBackend('A');
      // A file that would not even parse: lila must not look at it.
      writeConfig(dir, 'lila.conf', ['pool "']);

      const lila = await startLila(['round-robin', a.address, '-a', '127.0.0.1', '-p', '0'], { cwd: dir });

      assert.deepEqual([lila.mode, lila.count], ['round-robin', 1]);
      assert.equal((await request(lila.port)).body, 'A');
    });

    it('exits 1 naming the address a listener cannot listen on, announcing no listener', async () => {
      const a = await startHttpBackend('A');
      const free = await refusingPort();
      const taken = await startTcpBackend('T');
      const file = writeConfig(dir, 'lila.conf', [
        `pool a round-robin ${a.address}`,
        `listen 127.0.0.1:${free}`,
        '  route * a',
        `listen 127.0.0.1:${taken.port}`,
        '  route * a'
      ]);

      const result = await runLila(['--config', file]);

      assert.deepEqual(result, {
        code: 1,
        signal: null,
        stdout: '',
        stderr: `lila: cannot listen on 127.0.0.1:${taken.port}: address already in use\n`
      });
    });
  });

  describe('--watch', () => {
    it('reloads the file when it changes, and a certificate file a reload added when it changes', async () => {
      const [a, b] = [await startHttpBackend('A'), await startHttpBackend('B')];
      const port = await refusingPort();
      const other = pki.issue({ names: ['other.test'] });
      const certFile = path.join(dir, 'other.pem');
      fs.copyFileSync(other.certFile, certFile);
      const file = writeConfig(dir, 'lila.conf', [`pool a round-robin ${a.address}`, `listen 127.0.0.1:${port}`, '  route * a']);
      const lila = await startConfigured(['--config', file, '--watch'], 1);
      assert.match(lila.stderr, new RegExp(`listening on 127\\.0\\.0\\.1:${port}: 1 route -> a \\(${escape(file)}, watched\\)`));

      const reloaded = nextLine(lila, /lila: file changed: reloaded .*/);
      writeConfig(dir, 'lila.conf', [`pool b round-robin ${b.address}`, `listen 127.0.0.1:${port}`,
        `  --tls-cert ${certFile} --tls-key ${other.keyFile}`, '  route * b']);
      assert.equal((await reloaded).line, `lila: file changed: reloaded ${file}: listeners 1 (+1 -1), pools 1 (+1 -1 ~0), routes 1`);

      // The certificate named by the reload is followed from then on.
      const again = nextLine(lila, /lila: file changed: reloaded .*/);
      fs.copyFileSync(other.certFile, certFile);
      fs.appendFileSync(certFile, '\n');
      assert.match((await again).line, /^lila: file changed: reloaded /);
    });
  });

  describe('reloading on SIGHUP', () => {
    it('says what changed: listeners, pools added, removed and changed, and routes', async () => {
      const [a, b, c] = [await startHttpBackend('A'), await startHttpBackend('B'), await startHttpBackend('C')];
      const [first, second] = [await refusingPort(), await refusingPort()];
      const file = writeConfig(dir, 'lila.conf', [
        `pool a round-robin ${a.address}`,
        `pool b round-robin ${b.address}`,
        `listen 127.0.0.1:${first}`,
        '  route a.test a',
        '  route * b'
      ]);
      const lila = await startConfigured(['--config', file], 1);

      // a's options change, b goes, c comes, a second listener opens.
      writeConfig(dir, 'lila.conf', [
        `pool a round-robin ${a.address} --max-fails 3`,
        `pool c round-robin ${c.address}`,
        `listen 127.0.0.1:${first}`,
        '  route a.test a',
        '  route * c',
        `listen 127.0.0.1:${second}`,
        '  route * a'
      ]);
      const reloaded = nextLine(lila, /lila: SIGHUP: .*/);
      lila.child.kill('SIGHUP');

      assert.equal((await reloaded).line, `lila: SIGHUP: reloaded ${file}: listeners 2 (+1 -0), pools 2 (+1 -1 ~1), routes 3`);
      assert.equal((await request(first, { headers: { Host: 'x.test' } })).body, 'C');
      assert.equal((await request(second, { headers: { Host: 'x.test' } })).body, 'A');

      // The second listener goes: its port is refused once it has drained.
      writeConfig(dir, 'lila.conf', [`pool c round-robin ${c.address}`, `listen 127.0.0.1:${first}`, '  route * c']);
      const again = nextLine(lila, /lila: SIGHUP: .*/);
      lila.child.kill('SIGHUP');

      assert.equal((await again).line, `lila: SIGHUP: reloaded ${file}: listeners 1 (+0 -1), pools 1 (+0 -1 ~0), routes 1`);
      await assert.rejects(request(second, { agent: false }), { code: 'ECONNREFUSED' });
    });

    it('keeps what runs when the file has become bad, saying file:line, and takes the next good one', async () => {
      const [a, b] = [await startHttpBackend('A'), await startHttpBackend('B')];
      const port = await refusingPort();
      const file = writeConfig(dir, 'lila.conf', [`pool a round-robin ${a.address}`, `listen 127.0.0.1:${port}`, '  route * a']);
      const lila = await startConfigured(['--config', file], 1);

      writeConfig(dir, 'lila.conf', [`pool b round-robin ${b.address}`, `listen 127.0.0.1:${port}`, '  route b.test b', '  route * a']);
      const refused = nextLine(lila, /lila: error: SIGHUP: .*/);
      lila.child.kill('SIGHUP');

      assert.equal((await refused).line,
        `lila: error: SIGHUP: ${file}:4: route "*" names pool "a", which is not defined (pools: b); keeping the running configuration`);
      assert.equal((await request(port, { headers: { Host: 'b.test' } })).body, 'A');

      writeConfig(dir, 'lila.conf', [`pool b round-robin ${b.address}`, `listen 127.0.0.1:${port}`, '  route * b']);
      const reloaded = nextLine(lila, new RegExp(`lila: SIGHUP: reloaded ${escape(file)}: .*`));
      lila.child.kill('SIGHUP');
      await reloaded;

      assert.equal((await request(port)).body, 'B');
    });

    it('keeps the global options of the command line through a reload: they win over the file\'s, as at start', async () => {
      const echo = await startHttpBackend('echo', (req, res) => res.end(String(req.headers['x-request-id'])));
      const port = await refusingPort();
      const file = writeConfig(dir, 'lila.conf', [`pool a round-robin ${echo.address}`, `listen 127.0.0.1:${port}`, '  route * a']);
      const lila = await startConfigured(['--config', file, '--request-id'], 1);
      assert.match((await request(port)).body, /^[0-9a-f]{32}$/);

      const reloaded = nextLine(lila, /lila: SIGHUP: .*/);
      lila.child.kill('SIGHUP');
      assert.match((await reloaded).line, /^lila: SIGHUP: reloaded /);
      // A new connection: the one before may still be served by the listener the reload replaced.
      assert.match((await request(port, { agent: false })).body, /^[0-9a-f]{32}$/, 'still an id after the reload');
    });

    it('says which global options read at start changed, by line, and applies those a reload takes', async () => {
      const echo = await startHttpBackend('echo', (req, res) => res.end(String(req.headers['x-request-id'])));
      const port = await refusingPort();
      const file = writeConfig(dir, 'lila.conf', ['--drain-timeout 5s', '--log-level info',
        `pool a round-robin ${echo.address}`, `listen 127.0.0.1:${port}`, '  route * a']);
      const lila = await startConfigured(['--config', file], 1);
      assert.equal((await request(port)).body, 'undefined');

      // --drain-timeout changes, --log-level goes (back to its default), --request-id (which a reload applies) comes.
      writeConfig(dir, 'lila.conf', ['--drain-timeout 1s', '--request-id',
        `pool a round-robin ${echo.address}`, `listen 127.0.0.1:${port}`, '  route * a']);
      const reloaded = nextLine(lila, /lila: SIGHUP: reloaded .*/);
      lila.child.kill('SIGHUP');
      await reloaded;
      const warnings = lila.stderr.split('\n').filter((line) => line.startsWith('lila: warn:'));
      assert.deepEqual(warnings, [
        `lila: warn: ${file}:1: "--drain-timeout" changed, and lila reads it only at start: it stays as it was until lila restarts`,
        `lila: warn: ${file}: "--log-level" changed, and lila reads it only at start: it stays as it was until lila restarts`
      ]);
      assert.match((await request(port, { agent: false })).body, /^[0-9a-f]{32}$/);
    });

    it('keeps a listener whose certificate file has gone missing on a reload, naming the line', async () => {
      const a = await startHttpBackend('A');
      const port = await refusingPort();
      const cert = path.join(dir, 'site.pem');
      fs.copyFileSync(site.combinedFile, cert);
      const file = writeConfig(dir, 'lila.conf', [`pool a round-robin ${a.address}`, `listen 127.0.0.1:${port} --tls-cert ${cert}`, '  route * a']);
      const lila = await startConfigured(['--config', file], 1);

      const moved = path.join(dir, 'moved.pem');
      writeConfig(dir, 'lila.conf', [`pool a round-robin ${a.address}`, '', `listen 127.0.0.1:${port} --tls-cert ${moved}`, '  route * a']);
      const refused = nextLine(lila, /lila: error: SIGHUP: .*/);
      lila.child.kill('SIGHUP');

      assert.equal((await refused).line,
        `lila: error: SIGHUP: ${file}:3: certificate file "${moved}" cannot be read: no such file; keeping the running configuration`);
    });
  });
});
