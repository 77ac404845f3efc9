'use strict';

const assert = require('node:assert/strict');
const { performance } = require('node:perf_hooks');
const { LilaError } = require('../lib/errors');
const { RedisClient } = require('../lib/store/redis-client');
const { parseRedisUrl } = require('../lib/store/redis-url');
const { cleanup, deferred, onCleanup, refusingPort, startTcpBackend } = require('./helpers');
const { Pki } = require('./pki');
const { needRedis, startRedis } = require('./redis');

// A command rejected "at once" by a client whose timeout is 5000 ms took less than this.
const AT_ONCE = 1000;
const COUNTER = 'return redis.call("INCRBY", KEYS[1], ARGV[1])';

describe('RedisClient with a real redis-server', function () {
  before(function () {
    needRedis(this);
  });
  afterEach(cleanup);

  it('answers commands: status, bulk strings, integers, nulls, arrays and error replies', async () => {
    const server = await startRedis();
    const { client } = connect(server);
    assert.equal(await client.command(['SET', 'greeting', 'grüß dich']), 'OK');
    assert.equal(await client.command(['GET', 'greeting']), 'grüß dich');
    assert.equal(await client.command(['GET', 'absent']), null);
    assert.deepEqual(await client.command(['MGET', 'greeting', 'absent']), ['grüß dich', null]);
    assert.equal(await client.command(['INCRBY', 'n', 41]), 41);
    assert.equal(await client.command(['SET', 'b', Buffer.from([0xc3, 0xa9])]), 'OK');
    assert.equal(await client.command(['GET', 'b']), 'é');
    assert.equal(client.up, true);
    await assert.rejects(client.command(['INCR', 'greeting']), (err) => {
      assert.ok(err instanceof LilaError);
      assert.equal(err.code, 'LILA_ERR_STORE');
      assert.equal(err.message, `redis at 127.0.0.1:${server.port}: INCR: ERR value is not an integer or out of range`);
      assert.equal(err.redisError, 'ERR value is not an integer or out of range');
      assert.equal(err.unavailable, undefined);
      return true;
    });
    assert.throws(() => client.command([]), TypeError);
    assert.equal(await server.cli(['GET', 'n']), '41');
  });

  it('pipelines: 1000 INCRs in flight are answered in order', async () => {
    const server = await startRedis();
    const { client } = connect(server);
    const answers = await Promise.all(Array.from({ length: 1000 }, () => client.command(['INCR', 'hits'])));
    assert.deepEqual(answers, Array.from({ length: 1000 }, (_, i) => i + 1));
    assert.equal(await server.cli(['GET', 'hits']), '1000');
  });

  it('authenticates with the password of the URL', async () => {
    const server = await startRedis({ password: 's3cr:t/' });
    const { client } = connect(server);
    assert.equal(await client.command(['SET', 'k', 'v']), 'OK');
    assert.equal(await server.cli(['GET', 'k']), 'v');
  });

  it('authenticates as an ACL user', async () => {
    const server = await startRedis({ aclUser: { name: 'lila', password: 'p@ss word' } });
    const { client } = connect(server);
    assert.equal(await client.command(['ACL', 'WHOAMI']), 'lila');
  });

  it('says in one line that the password is wrong, and that one is needed', async () => {
    const server = await startRedis({ password: 'right' });
    for (const [password, why] of [
      ['wrong', 'AUTH: WRONGPASS invalid username-password pair or user is disabled.'],
      [null, 'PING: NOAUTH Authentication required.']
    ]) {
      const { client, states } = connect(server, { password });
      await assert.rejects(client.command(['GET', 'k']), (err) => {
        assert.equal(err.code, 'LILA_ERR_STORE');
        assert.equal(err.message, `redis at 127.0.0.1:${server.port}: ${why}`);
        assert.equal(err.unavailable, true);
        return true;
      });
      assert.deepEqual(states, [`down: redis at 127.0.0.1:${server.port}: ${why}`]);
      assert.equal(client.up, false);
    }
  });

  it('selects the database of the URL on its connection', async () => {
    const server = await startRedis();
    const { client } = connect(server, { db: 5 });
    assert.equal(await client.command(['SET', 'in5', 'yes']), 'OK');
    assert.equal(await server.cli(['GET', 'in5'], { db: 5 }), 'yes');
    assert.equal(await server.cli(['GET', 'in5']), null);
  });

  it('runs a script by its SHA, loading it once when the server lost it (NOSCRIPT)', async () => {
    const server = await startRedis();
    const { client } = connect(server);
    const counter = client.script(COUNTER);
    assert.match(counter.sha, /^[0-9a-f]{40}$/);
    assert.equal(await counter.run(['c'], [2]), 2);
    assert.equal(await counter.run(['c'], [3]), 5);
    assert.equal(await scriptLoads(server), 1);
    await server.cli(['SCRIPT', 'FLUSH']);
    const answers = await Promise.all(Array.from({ length: 20 }, () => counter.run(['c'], [1])));
    assert.deepEqual(answers.sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => 6 + i));
    assert.equal(await scriptLoads(server), 2);
    assert.equal(await client.evalsha(counter.sha, ['c'], [10]), 35);
    await assert.rejects(client.evalsha('0'.repeat(40), [], []), { redisError: /^NOSCRIPT / });
    await assert.rejects(client.script('return redis.call("NOPE")').run(), { redisError: /^ERR .*Unknown Redis command/ });
  });

  it('rejects at once while the server is down, and reconnects once it is back', async () => {
    const server = await startRedis();
    const { client, states, until } = connect(server, { timeout: 5000 });
    assert.equal(await client.command(['SET', 'k', 'v']), 'OK');
    // A command in flight when the server goes: BLPOP waits for a list nobody fills.
    const blocked = assert.rejects(client.command(['BLPOP', 'nothing', 0]), {
      unavailable: true,
      message: /^redis at 127\.0\.0\.1:\d+: the connection (closed|failed \(ECONNRESET\))$/
    });
    await server.kill();
    await blocked;
    await until(false);
    for (let i = 0; i < 3; i++) {
      const start = performance.now();
      await assert.rejects(client.command(['GET', 'k']), (err) => {
        assert.equal(err.unavailable, true);
        assert.match(err.message, /^redis at 127\.0\.0\.1:\d+: not connected, (the connection (closed|failed \(ECONNRESET\))|cannot connect \(ECONNREFUSED\))$/);
        return true;
      });
      assert.ok(performance.now() - start < AT_ONCE, `rejected after ${performance.now() - start} ms`);
    }
    await server.start();
    await until(true);
    // Nothing was saved: the server is empty again.
    assert.equal(await client.command(['GET', 'k']), null);
    await server.stop();
    await until(false);
    await server.start();
    await until(true);
    assert.equal(await client.command(['INCR', 'k']), 1);
    assert.deepEqual(states.map((state) => state.split(':')[0]), ['up', 'down', 'up', 'down', 'up']);
  });

  it('rejects a command a stopped server does not answer within the timeout, and reconnects once it resumes', async () => {
    const server = await startRedis();
    const { client, states, until } = connect(server, { timeout: 300 });
    assert.equal(await client.command(['PING']), 'PONG');
    server.pause();
    const start = performance.now();
    const late = [client.command(['INCR', 'n']), client.command(['INCR', 'n'])];
    await Promise.all(late.map((command) => assert.rejects(command, {
      unavailable: true,
      message: `redis at 127.0.0.1:${server.port}: no answer within 300 ms`
    })));
    const took = performance.now() - start;
    assert.ok(took >= 290 && took < 5000, `rejected after ${took} ms`);
    assert.equal(client.up, false);
    await assert.rejects(client.command(['INCR', 'n']), {
      unavailable: true,
      message: `redis at 127.0.0.1:${server.port}: not connected, no answer within 300 ms`
    });
    server.resume();
    await until(true);
    assert.equal(await client.command(['PING']), 'PONG');
    assert.deepEqual(states, ['up', `down: redis at 127.0.0.1:${server.port}: no answer within 300 ms`, 'up']);
  });

  it('speaks TLS to a rediss:// server', async () => {
    const pki = new Pki();
    onCleanup(() => pki.remove());
    const { certFile, keyFile } = pki.issue({ names: ['localhost'], ips: ['127.0.0.1'] });
    const server = await startRedis({ tls: { certFile, keyFile, caFile: pki.caFile }, password: 'pw' });
    assert.match(server.url, /^rediss:\/\//);
    const { client } = connect(server, { tls: { ca: pki.ca } });
    assert.equal(await client.command(['SET', 'over', 'tls']), 'OK');
    assert.equal(await server.cli(['GET', 'over']), 'tls');
    const { client: stranger } = connect(server, { tls: {} });
    await assert.rejects(stranger.command(['PING']), {
      unavailable: true,
      message: `redis at 127.0.0.1:${server.port}: cannot connect (self-signed certificate in certificate chain)`
    });
  });

  it('leaves no socket or timer once closed, up or down, and refuses commands after', async () => {
    const server = await startRedis();
    // Once mocha's timer for this test is set (after its first await).
    await new Promise(setImmediate);
    const before = handles();
    const up = new RedisClient({ host: '127.0.0.1', port: server.port });
    assert.equal(await up.command(['PING']), 'PONG');
    const inFlight = assert.rejects(up.command(['BLPOP', 'nothing', 0]), {
      closed: true,
      message: `redis at 127.0.0.1:${server.port}: the client is closed`
    });
    await up.close();
    await inFlight;
    await assert.rejects(up.command(['PING']), { closed: true, unavailable: true });
    // Down: waiting to connect again.
    const down = new RedisClient({ host: '127.0.0.1', port: server.port });
    await down.command(['PING']);
    await server.kill();
    await assert.rejects(down.command(['PING']), { unavailable: true });
    await down.close();
    for (const [name, count] of Object.entries(handles())) assert.ok(count <= (before[name] || 0), `${count} ${name} now, ${before[name] || 0} before`);
  });
});

describe('RedisClient without a redis-server', () => {
  afterEach(cleanup);

  const options = [
    [{ host: '' }, '"host" must be a non-empty string, received ""'],
    [{ host: 'h', port: 0 }, '"port" must be an integer between 1 and 65535, received 0'],
    [{ host: 'h', user: 'lila' }, '"password" must be a string when "user" is set, received null'],
    [{ host: 'h', db: -1 }, '"db" must be an integer of 0 or more, received -1'],
    [{ host: 'h', timeout: 0 }, '"timeout" must be a positive integer (ms), received 0'],
    [{ host: 'h', onState: 'log' }, '"onState" must be null or a function, received "log"']
  ];
  for (const [given, message] of options) {
    it(`refuses ${JSON.stringify(given)}`, () => {
      assert.throws(() => new RedisClient(given), { code: 'LILA_ERR_INVALID_OPTION', message: `redis client: ${message}` });
    });
  }

  it('says once that it cannot connect, and rejects every command at once', async () => {
    const port = await refusingPort();
    const states = [];
    const client = new RedisClient({ host: '127.0.0.1', port, timeout: 5000, onState: (up, err) => states.push([up, err.message]) });
    onCleanup(() => client.close());
    for (let i = 0; i < 3; i++) {
      await assert.rejects(client.command(['PING']), (err) => {
        assert.equal(err.unavailable, true);
        assert.match(err.message, new RegExp(`^redis at 127\\.0\\.0\\.1:${port}: (not connected, )?cannot connect \\(ECONNREFUSED\\)$`));
        return true;
      });
    }
    assert.deepEqual(states, [[false, `redis at 127.0.0.1:${port}: cannot connect (ECONNREFUSED)`]]);
  });

  it('ends a connection that answers what is not RESP2', async () => {
    const server = await startTcpBackend('garbage', (socket) => socket.once('data', () => socket.write('?what\r\n')));
    const client = new RedisClient({ host: '127.0.0.1', port: server.port });
    onCleanup(() => client.close());
    await assert.rejects(client.command(['PING']), {
      unavailable: true,
      message: `redis at 127.0.0.1:${server.port}: a reply that is not RESP2 (an unknown reply type "?" (0x3f))`
    });
    assert.equal(client.up, false);
  });

  it('ends a connection that answers more than was asked', async () => {
    // The handshake's PING, the command's, then a reply to nothing.
    const server = await startTcpBackend('chatty', (socket) => socket.once('data', () => socket.write('+PONG\r\n+PONG\r\n+OK\r\n')));
    const down = deferred();
    const client = new RedisClient({ host: '127.0.0.1', port: server.port, onState: (up, err) => { if (!up) down.resolve(err); } });
    onCleanup(() => client.close());
    assert.equal(await client.command(['PING']), 'PONG');
    assert.equal((await down.promise).message, `redis at 127.0.0.1:${server.port}: a reply to no command`);
  });
});

// A client of the server (its URL read as lila reads it), closed at cleanup, whose state changes
// are recorded: 'up', or 'down: <message>'; until(up) resolves once the last one is that.
function connect(server, options = {}) {
  const url = parseRedisUrl(server.url);
  const states = [];
  let wake = null;
  const client = new RedisClient({
    host: url.host,
    port: url.port,
    user: url.user,
    password: url.password,
    db: url.db,
    ...options,
    onState(up, err) {
      states.push(up ? 'up' : `down: ${err.message}`);
      if (wake !== null) wake();
    }
  });
  onCleanup(() => client.close());
  async function until(up) {
    while (states.length === 0 || (states.at(-1) === 'up') !== up) await new Promise((resolve) => { wake = resolve; });
  }
  return { client, states, until };
}

async function scriptLoads(server) {
  const stats = await server.cli(['INFO', 'commandstats']);
  const match = /cmdstat_script\|load:calls=(\d+)/.exec(stats);
  return match === null ? 0 : Number(match[1]);
}

// The sockets and timers this process holds (mocha's own included: compared within one test).
function handles() {
  const counts = {};
  for (const name of process.getActiveResourcesInfo()) {
    if (name === 'TCPSocketWrap' || name === 'TLSWrap' || name === 'Timeout') counts[name] = (counts[name] || 0) + 1;
  }
  return counts;
}
