'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync, spawn } = require('node:child_process');
const { once } = require('node:events');
const { connectH2, fetchH2 } = require('./h2');
const {
  cleanup,
  startHttpBackend,
  startLila,
  spawnLila,
  runLila,
  request,
  refusingPort,
  nextLine,
  responseHead
} = require('./helpers');
const BasicAuth = require('../lib/actions/basic-auth');
const RouteActions = require('../lib/actions/route-actions');
const { parseHash, verifyPassword } = require('../lib/actions/password-hash');

const LILA = path.join(__dirname, '..', 'lila');
const CHALLENGE = 'Basic realm="lila", charset="UTF-8"';
const HTPASSWD = hasHtpasswd();
// A test that needs Apache's htpasswd is pending, saying why, only where it cannot run at all.
const withHtpasswd = HTPASSWD || process.env.LILA_REQUIRE_HTPASSWD === '1'
  ? it
  : (title) => it(`${title} — pending: htpasswd (Debian's apache2-utils) is not installed`);

/** @returns {boolean} whether Apache's htpasswd can be run */
function hasHtpasswd() {
  try {
    execFileSync('htpasswd', ['-nbB', '-C', '4', 'u', 'p'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `lila hash-password` with `input` on its standard input (a pipe).
 *
 * @param {string[]} args after `hash-password`
 * @param {string} input
 * @returns {Promise<{code: number, stdout: string, stderr: string}>}
 */
async function hashPassword(args, input) {
  const child = spawn(process.execPath, [LILA, 'hash-password', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => { stdout += chunk; });
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  child.stdin.on('error', () => {});
  child.stdin.end(input);
  const [code] = await once(child, 'close');
  return { code, stdout, stderr };
}

/**
 * `lila hash-password --user NAME`, the password on its standard input.
 *
 * @param {string} user
 * @param {string} password
 * @returns {Promise<string>} the line it prints, without its newline
 */
async function hashPasswordLine(user, password) {
  const { code, stdout, stderr } = await hashPassword(['--user', user], `${password}\n`);
  assert.equal(code, 0, stderr);
  return stdout.trim();
}


/** `Authorization: Basic` for these credentials. */
function basic(user, password) {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/**
 * A backend answering with the fields it got, as JSON, and counting requests.
 *
 * @returns {Promise<Awaited<ReturnType<typeof startHttpBackend>> & {requests: number}>}
 */
async function echoBackend() {
  const backend = await startHttpBackend('A', (req, res) => {
    backend.requests++;
    req.resume();
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(req.headers));
  });
  return Object.assign(backend, { requests: 0 });
}

describe('--basic-auth', () => {
  let dir;
  let file;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-basic-auth-'));
    file = path.join(dir, 'users.htpasswd');
    const lines = [await hashPasswordLine('bob', "b0b's pass: ünïcode")];
    if (HTPASSWD) {
      // htpasswd -B at its default cost (5), and at 10 as a site would choose.
      lines.push(execFileSync('htpasswd', ['-nbB', 'alice', 'wonder land'], { encoding: 'utf8' }).trim());
      lines.push(execFileSync('htpasswd', ['-nbB', '-C', '10', 'dave', 'd4ve'], { encoding: 'utf8' }).trim());
    }
    fs.writeFileSync(file, `# users of the tests\n${lines.join('\n')}\n`);
  });

  afterEach(cleanup);

  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  for (const engine of ['fast', 'node']) {
    const protocols = engine === 'fast' ? 'HTTP/1.1 and h2' : 'HTTP/1.1';
    describe(`--engine ${engine} (${protocols})`, () => {
      let backend;
      let lila;

      beforeEach(async () => {
        backend = await echoBackend();
        lila = await startLila(['round-robin', backend.address, '--port', '0', '--address', '127.0.0.1', '--engine', engine, '--basic-auth', file]);
      });

      withHtpasswd('lets in the users of a file htpasswd -B wrote, and the backend gets no Authorization', async () => {
        for (const [user, password] of [['alice', 'wonder land'], ['dave', 'd4ve']]) {
          const response = await request(lila.port, { headers: { authorization: basic(user, password), 'x-kept': 'yes' } });

          assert.equal(response.status, 200, `${user}: ${response.body}`);
          const seen = JSON.parse(response.body);
          assert.equal(seen.authorization, undefined);
          assert.equal(seen['x-kept'], 'yes');
        }
      });

      it("lets in the user of lila hash-password's line (scrypt, a UTF-8 password)", async () => {
        const response = await request(lila.port, { headers: { authorization: basic('bob', "b0b's pass: ünïcode") } });

        assert.equal(response.status, 200, response.body);
        assert.equal(JSON.parse(response.body).authorization, undefined);
      });

      it('answers 401 with WWW-Authenticate to missing, wrong and malformed credentials and to unknown users, never asking the backend', async () => {
        const tries = {
          missing: undefined,
          'wrong password': basic('bob', 'b0b'),
          'unknown user': basic('mallory', "b0b's pass: ünïcode"),
          'no colon': `Basic ${Buffer.from('bob').toString('base64')}`,
          'not base64': 'Basic !!!',
          'another scheme': 'Bearer abc'
        };
        for (const [what, authorization] of Object.entries(tries)) {
          const response = await request(lila.port, { headers: authorization === undefined ? {} : { authorization } });

          assert.equal(response.status, 401, what);
          assert.equal(response.headers['www-authenticate'], CHALLENGE, what);
          assert.match(response.body, /^lila: 401 Unauthorized: /, what);
        }
        assert.equal(backend.requests, 0);
      });

      withHtpasswd('answers 401 to a wrong password of a bcrypt user', async () => {
        const response = await request(lila.port, { headers: { authorization: basic('alice', 'wonderland') } });

        assert.equal(response.status, 401);
        assert.equal(backend.requests, 0);
      });

      it('asks for credentials before a WebSocket upgrade, and lets the right ones through', async () => {
        const head = (authorization) => 'GET /chat HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
          'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
          `${authorization === undefined ? '' : `Authorization: ${authorization}\r\n`}\r\n`;
        backend.on('upgrade', (req, socket) => {
          backend.requests++;
          socket.end(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Had-Authorization: ${req.headers.authorization !== undefined}\r\n\r\n`);
        });

        const refused = await responseHead(lila.port, head());
        assert.match(refused, /^HTTP\/1\.1 401 /);
        assert.match(refused, /\r\nWWW-Authenticate: Basic realm="lila", charset="UTF-8"\r\n/i);
        assert.equal(backend.requests, 0);

        const upgraded = await responseHead(lila.port, head(basic('bob', "b0b's pass: ünïcode")));
        assert.match(upgraded, /^HTTP\/1\.1 101 /);
        assert.match(upgraded, /\r\nX-Had-Authorization: false\r\n/i);
      });

      if (engine === 'fast') {
        it('asks h2 clients too, on each stream', async () => {
          const session = await connectH2(`http://127.0.0.1:${lila.port}`);

          const refused = await fetchH2(session, {});
          assert.equal(refused.status, 401);
          assert.equal(refused.headers['www-authenticate'], CHALLENGE);

          const served = await fetchH2(session, { authorization: basic('bob', "b0b's pass: ünïcode") });
          assert.equal(served.status, 200, String(served.body));
          assert.equal(JSON.parse(served.body).authorization, undefined);
          assert.equal(backend.requests, 1);
        });
      }
    });
  }

  // The access line of a request bob made, in each format: where the format puts the user.
  const USER_IN_LINE = {
    combined: /^127\.0\.0\.1 - bob \[/,
    common: /^127\.0\.0\.1 - bob \[/,
    text: / user=bob\b/,
    json: /"user":"bob"/
  };
  for (const [format, pattern] of Object.entries(USER_IN_LINE)) {
    it(`writes the user it let in in the access line (--access-log-format ${format}), HTTP/1.1 and h2, and no user for others`, async () => {
      const backend = await echoBackend();
      const lila = await startLila(['round-robin', backend.address, '--port', '0', '--address', '127.0.0.1', '--basic-auth', file,
        '--access-log-format', format]);
      const accessLine = /.*(?:GET|"method":"GET").*/;

      const first = nextLine(lila, accessLine);
      assert.equal((await request(lila.port, { headers: { authorization: basic('bob', "b0b's pass: ünïcode") } })).status, 200);
      assert.match((await first).line.replace(/^lila: /, ''), pattern, 'HTTP/1.1, checked now');
      // Remembered credentials: the user is known without a check.
      const again = nextLine(lila, accessLine);
      await request(lila.port, { headers: { authorization: basic('bob', "b0b's pass: ünïcode") } });
      assert.match((await again).line.replace(/^lila: /, ''), pattern, 'HTTP/1.1, remembered');
      const session = await connectH2(`http://127.0.0.1:${lila.port}`);
      const h2 = nextLine(lila, accessLine);
      assert.equal((await fetchH2(session, { authorization: basic('bob', "b0b's pass: ünïcode") })).status, 200);
      assert.match((await h2).line.replace(/^lila: /, ''), pattern, 'h2');
      const refused = nextLine(lila, accessLine);
      assert.equal((await request(lila.port, { headers: { authorization: basic('bob', 'wrong') } })).status, 401);
      assert.doesNotMatch((await refused).line, /bob/, 'a user refused is not named');
    });
  }

  it('reads the file again when the config reloads: a user added is let in', async () => {
    const backend = await echoBackend();
    const users = path.join(dir, 'reloaded.htpasswd');
    fs.writeFileSync(users, `${await hashPasswordLine('bob', 'first')}\n`);
    const config = path.join(dir, 'lila.conf');
    const port = await refusingPort();
    fs.writeFileSync(config, [`pool web round-robin ${backend.address}`, `listen 127.0.0.1:${port}`, `  route * web --basic-auth ${users}`, ''].join('\n'));
    const lila = spawnLila(['--config', config]);
    await nextLine(lila, /lila: http listening on .*/, 5000);
    const carol = { headers: { authorization: basic('carol', 'second') } };
    assert.equal((await request(port, carol)).status, 401);

    fs.appendFileSync(users, `${await hashPasswordLine('carol', 'second')}\n`);
    const reloaded = nextLine(lila, /lila: SIGHUP: .*/, 5000);
    lila.child.kill('SIGHUP');
    await reloaded;

    assert.equal((await request(port, carol)).status, 200);
    assert.equal((await request(port, { headers: { authorization: basic('bob', 'first') } })).status, 200);
  });

  it('names the file and line of a hash it does not take, and what it takes; exit 2', async () => {
    const users = path.join(dir, 'md5.htpasswd');
    fs.writeFileSync(users, `${await hashPasswordLine('bob', 'first')}\nalice:$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/\n`);

    const { code, stderr } = await runLila(['round-robin', '127.0.0.1:1', '--port', '0', '--basic-auth', users]);

    assert.equal(code, 2);
    assert.equal(stderr, `lila: ${users}:2: user "alice": an MD5 (apr1) hash is not supported: ` +
      'lila takes bcrypt ($2y$, $2b$, $2a$: htpasswd -B) and scrypt ($scrypt$: lila hash-password)\n');
  });

  it('names the route of a file that does not read', async () => {
    const { code, stderr } = await runLila(['round-robin', '127.0.0.1:1', '--port', '0', '--basic-auth', path.join(dir, 'none')]);

    assert.equal(code, 2);
    assert.match(stderr, /^lila: route "\*": --basic-auth: cannot read ".*none": ENOENT\n/);
  });

  describe('lila hash-password', () => {
    it('prints the scrypt hash of the first line of a pipe, or with --user the whole line', async () => {
      const alone = await hashPassword([], 'first line\r\nsecond line\n');
      assert.equal(alone.code, 0);
      assert.match(alone.stdout, /^\$scrypt\$ln=15,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}\n$/);
      assert.equal(alone.stderr, '');
      assert.equal(await verifyPassword(parseHash(alone.stdout.trim()), Buffer.from('first line')), true);

      const line = await hashPassword(['-u', 'carol'], 'no newline at the end');
      assert.equal(line.code, 0);
      assert.match(line.stdout, /^carol:\$scrypt\$/);
      assert.equal(await verifyPassword(parseHash(line.stdout.trim().slice('carol:'.length)), Buffer.from('no newline at the end')), true);
    });

    it('exits 2 with one line for a usage error, and 0 for --help', async () => {
      const mistakes = [
        [['--cost', '3'], 'x\n', 'unknown option "--cost"'],
        [['--user', 'a:b'], 'x\n', 'the user name "a:b" is empty or has a ":", a space or a control character'],
        [[], '\n', 'the password is empty'],
        [[], '', 'no password read (a line of at most 4096 bytes)']
      ];
      for (const [args, input, message] of mistakes) {
        const { code, stdout, stderr } = await hashPassword(args, input);

        assert.equal(code, 2, message);
        assert.equal(stdout, '');
        assert.equal(stderr, `lila: hash-password: ${message}\nTry "lila hash-password --help" for more information.\n`);
      }
      const help = await hashPassword(['--help'], '');
      assert.equal(help.code, 0);
      assert.match(help.stdout, /^Usage: lila hash-password \[--user <name>\]\n[\s\S]*Exit codes: 0/);
    });
  });

  describe('the checks (in this process)', () => {
    const view = (authorization, extra = {}) => ({
      method: 'GET', url: '/', clientAddress: '127.0.0.1', headers: { authorization, ...extra },
      header(name) {
        return this.headers[name];
      }
    });

    it('checks new credentials once, however many requests carry them at once, then remembers them', async () => {
      const auth = BasicAuth.from(file, 'lila', 'route "*"');
      const credentials = basic('bob', "b0b's pass: ünïcode");

      const first = auth.check(view(credentials));
      const second = auth.check(view(credentials));
      assert.equal(typeof first.then, 'function');
      assert.equal(auth.checking.size, 1);
      assert.deepEqual(await Promise.all([first, second]), [null, null]);
      // Remembered: no hash, no promise.
      assert.equal(auth.check(view(credentials)), null);
    });

    it('costs an unknown user a hash too, and remembers no failure', async () => {
      const auth = BasicAuth.from(file, 'lila', 'route "*"');

      const unknown = auth.check(view(basic('mallory', 'x')));
      assert.equal(typeof unknown.then, 'function');
      assert.equal((await unknown).status, 401);
      assert.equal(typeof auth.check(view(basic('mallory', 'x'))).then, 'function');
    });

    it('removes every Authorization field the backend would get', () => {
      const auth = BasicAuth.from(file, 'lila', 'route "*"');

      assert.deepEqual(auth.requestHeaders(['Host', 'a', 'Authorization', 'Basic x', 'X-A', '1', 'authorization', 'Basic y']), ['Host', 'a', 'X-A', '1']);
    });

    it('answers a CORS preflight without credentials, and asks for them on the real request', async () => {
      const actions = RouteActions.from({ basicAuth: file, cors: 'https://app.example' }, { text: 'api.example', path: null });
      const preflight = view(undefined, { origin: 'https://app.example', 'access-control-request-method': 'PUT' });
      preflight.method = 'OPTIONS';

      assert.equal((await actions.answer(preflight)).status, 204);
      const refusal = await actions.answer(view(undefined, { origin: 'https://app.example' }));
      assert.equal(refusal.status, 401);
      assert.deepEqual(refusal.fields, ['WWW-Authenticate', 'Basic realm="api.example", charset="UTF-8"']);
    });

    it('refuses --basic-auth with --forward-auth on one route', () => {
      assert.throws(() => RouteActions.from({ basicAuth: file, forwardAuth: 'http://127.0.0.1:9/auth' }, { text: '*', path: null }),
        { code: 'LILA_ERR_INVALID_OPTION', message: 'route "*": --basic-auth and --forward-auth both check credentials: give one' });
    });
  });
});
