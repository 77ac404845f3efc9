'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { Logger } = require('../lib');
const Traffic = require('../lib/ops/traffic');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { connectH2, fetchH2 } = require('./h2');
const {
  cleanup,
  onCleanup,
  startHttpBackend,
  startTcpBackend,
  refusingPort,
  request,
  until,
  collect,
  startLila,
  runLila
} = require('./helpers');
const { findExecutable, startPeer } = require('./peers');
const { skipPeersOff } = require('./tools');

const NGINX = findExecutable('nginx');
// A value between quotes as nginx writes it: escaped bytes as \xHH, nothing else with a backslash or a quote.
const QUOTED = '((?:[^"\\\\\\x00-\\x1f\\x7f-\\uffff]|\\\\x[0-9A-F]{2})*)';
const TIME_LOCAL = '(\\d{2}/(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)/\\d{4}:\\d{2}:\\d{2}:\\d{2} [+-]\\d{4})';
// nginx's log_format combined, strictly: $remote_addr - $remote_user [$time_local] "$request" $status
// $body_bytes_sent "$http_referer" "$http_user_agent".
const COMMON = `^(\\S+) - (\\S+) \\[${TIME_LOCAL}\\] "${QUOTED}" (\\d{3}) (\\d+)`;
const COMBINED_LINE = new RegExp(`${COMMON} "${QUOTED}" "${QUOTED}"$`);
const COMMON_LINE = new RegExp(`${COMMON}$`);
const BODY = 'hello from A\n';
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * A combined or common line's fields, or null when it is not one.
 *
 * @param {string} line
 * @returns {{address: string, user: string, time: string, request: string, status: number, bytes: number,
 *   referer?: string, userAgent?: string} | null}
 */
function parseLine(line) {
  const match = COMBINED_LINE.exec(line) || COMMON_LINE.exec(line);
  if (match === null) return null;
  const [, address, user, time, request, status, bytes, referer, userAgent] = match;
  const fields = { address, user, time, request, status: Number(status), bytes: Number(bytes) };
  if (referer !== undefined) Object.assign(fields, { referer, userAgent });
  return fields;
}

// $time_local as milliseconds since the epoch.
function timeOf(text) {
  const [, day, month, year, hours, minutes, seconds, sign, offsetHours, offsetMinutes] =
    /^(\d{2})\/(\w{3})\/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})$/.exec(text);
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes));
  return Date.UTC(Number(year), MONTHS.indexOf(month), Number(day), Number(hours), Number(minutes), Number(seconds)) - offset * 60000;
}

/**
 * Starts nginx in the foreground, proxying to `backend` on an HTTP/1.1 port and an h2c one,
 * writing combined lines to combined.log and common lines to common.log in a temporary directory.
 *
 * @param {number} backendPort
 * @returns {Promise<{port: number, h2Port: number, lines: (name: string) => string[]}>}
 */
async function startNginx(backendPort) {
  const h2Port = await refusingPort();
  const nginx = await startPeer({
    executable: NGINX,
    configure: (dir, port) => ({
      config: `
worker_processes 1;
master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  log_format common '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent';
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    listen 127.0.0.1:${h2Port} http2;
    access_log ${dir}/combined.log combined;
    access_log ${dir}/common.log common;
    location / { proxy_pass http://127.0.0.1:${backendPort}; }
  }
}
`,
      args: ['-p', dir, '-c', path.join(dir, 'peer.conf'), '-e', path.join(dir, 'error.log'), '-g', 'daemon off;']
    })
  });
  const lines = (name) => {
    const file = path.join(nginx.dir, name);
    return fs.existsSync(file) ? fs.readFileSync(file, 'latin1').split('\n').filter((line) => line !== '') : [];
  };
  return { port: nginx.port, h2Port, lines };
}

// Sends raw request bytes (latin1) on a connection of their own; resolves once the server closed it.
async function send(port, bytes) {
  const socket = net.connect(port, '127.0.0.1');
  onCleanup(() => socket.destroy());
  socket.on('error', () => {});
  socket.write(Buffer.from(bytes, 'latin1'));
  return (await collect(socket)).toString('latin1');
}

// lila's access lines: what it writes to stderr without its `lila: ` prefix.
function accessLinesOf(lila) {
  return lila.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('lila: '));
}

// The same requests, byte for byte, for nginx and lila.
const REQUESTS = [
  'GET /cart?id=7&q=%22x%22 HTTP/1.1\r\nHost: shop.test\r\nReferer: https://shop.test/list?page=2\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0\r\nConnection: close\r\n\r\n',
  // What nginx escapes: a quote, a backslash, a tab, a byte past ASCII; an empty Referer is "" and no User-Agent "-".
  'GET /escapes HTTP/1.1\r\nHost: shop.test\r\nReferer: \r\nX-Other: 1\r\nConnection: close\r\n\r\n',
  'GET /ua HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: say "hi"\\back\tslash caf\u00e9\r\nConnection: close\r\n\r\n',
  'POST /submit HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 4\r\nUser-Agent: curl/8.5.0\r\nConnection: close\r\n\r\ndata',
  'HEAD /head HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: curl/8.5.0\r\nConnection: close\r\n\r\n',
  'GET /missing HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: curl/8.5.0\r\nConnection: close\r\n\r\n',
  'GET /old HTTP/1.0\r\nHost: shop.test\r\nUser-Agent: Wget/1.21\r\n\r\n'
];

describe('access log formats', () => {
  afterEach(cleanup);

  describe('Logger', () => {
    it('writes combined and common lines as nginx does: - for what is missing, values escaped as \\xHH', () => {
      const written = [];
      const stream = { write: (text) => written.push(text) };
      const entry = {
        client: '10.1.2.3', user: undefined, method: 'GET', url: '/a?b=1', protocol: 'HTTP/1.1', status: 200, bytes: 1532,
        referer: undefined, userAgent: 'say "hi"\\\u0001\u007f\u00e9\u20ac'
      };
      for (const accessFormat of ['combined', 'common']) {
        const logger = new Logger({ access: true, accessFormat, stream });
        logger.accessLine(entry);
        logger.accessLine({ ...entry, user: 'alice', referer: '', userAgent: 'curl/8.5.0' });
        logger.flush();
      }
      const lines = written.join('').split('\n').filter((line) => line !== '');
      const time = /\[([^\]]+)\]/.exec(lines[0])[1];
      assert.match(time, new RegExp(`^${TIME_LOCAL}$`));
      assert.deepEqual(lines, [
        `10.1.2.3 - - [${time}] "GET /a?b=1 HTTP/1.1" 200 1532 "-" "say \\x22hi\\x22\\x5C\\x01\\x7F\\xE9\\xE2\\x82\\xAC"`,
        `10.1.2.3 - alice [${time}] "GET /a?b=1 HTTP/1.1" 200 1532 "" "curl/8.5.0"`,
        `10.1.2.3 - - [${time}] "GET /a?b=1 HTTP/1.1" 200 1532`,
        `10.1.2.3 - alice [${time}] "GET /a?b=1 HTTP/1.1" 200 1532`
      ]);
      for (const line of lines) assert.ok(parseLine(line) !== null, line);
    });

    it('writes $time_local in the local time zone, with its offset', () => {
      const script = "process.stdout.write(require('./lib/ops/logger').formatTimeLocal(new Date(Date.UTC(2026, 10, 26, 3, 40, 0))))";
      const run = (tz) => execFileSync(process.execPath, ['-e', script], { cwd: path.join(__dirname, '..'), env: { ...process.env, TZ: tz } }).toString();
      assert.equal(run('UTC'), '26/Nov/2026:03:40:00 +0000');
      assert.equal(run('America/New_York'), '25/Nov/2026:22:40:00 -0500');
      assert.equal(run('Asia/Kolkata'), '26/Nov/2026:09:10:00 +0530');
    });

    it('takes the user --basic-auth let in from the request\'s view, - without one', () => {
      const written = [];
      const logger = new Logger({ access: true, accessFormat: 'combined', stream: { write: (text) => written.push(text) } });
      const traffic = new Traffic(logger);
      const request = { method: 'GET', url: '/', httpVersionMajor: 1, httpVersionMinor: 1, rawHeaders: ['Host', 'a', 'user-agent', 'ua'] };
      const record = (status, bytesSent, view) => ({ servedBy: null, answered: status, elapsed: 1, request, clientAddress: '127.0.0.1', bytesSent, route: null, pool: null, ids: null, view });
      traffic.request(record(401, 0, { user: undefined }));
      traffic.request(record(200, 2, { user: 'alice' }));
      logger.flush();
      const lines = written.join('').split('\n').filter((line) => line !== '');
      assert.deepEqual(lines.map((line) => parseLine(line).user), ['-', 'alice']);
    });

    it('refuses an unknown format', () => {
      assert.throws(() => new Logger({ accessFormat: 'apache' }), { message: 'unknown access log format "apache"' });
    });
  });

  for (const engine of HTTP_ENGINES) {
    describe(`combined and common, compared with nginx's (${engine} engine)`, () => {
      before(needNginx);

      it('writes the line nginx writes for the same request, without lila\'s prefix', async () => {
        const backend = await startHttpBackend('A', (req, res) => {
          req.resume();
          res.writeHead(req.url === '/missing' ? 404 : 200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(BODY) });
          res.end(req.method === 'HEAD' ? undefined : BODY);
        });
        const nginx = await startNginx(backend.port);
        const lilas = {};
        for (const format of ['combined', 'common']) {
          lilas[format] = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--engine', engine, '--access-log-format', format]);
        }

        for (const bytes of REQUESTS) {
          await send(nginx.port, bytes);
          for (const format of ['combined', 'common']) await send(lilas[format].port, bytes);
        }
        await until(() => nginx.lines('combined.log').length === REQUESTS.length && nginx.lines('common.log').length === REQUESTS.length, 'nginx\'s lines');
        for (const format of ['combined', 'common']) {
          const lila = lilas[format];
          await untilLines(lila, REQUESTS.length);
          const theirs = nginx.lines(`${format}.log`).map(parseLine);
          const ours = accessLinesOf(lila).map((line) => {
            const parsed = parseLine(line);
            assert.ok(parsed !== null, `${format}: ${line}`);
            return parsed;
          });
          assert.equal(ours.length, REQUESTS.length);
          for (const [i, nginxLine] of theirs.entries()) {
            // Written moments apart: the same time to a few seconds, in the same zone.
            assert.ok(Math.abs(timeOf(ours[i].time) - timeOf(nginxLine.time)) < 5000, `${ours[i].time} ${nginxLine.time}`);
            assert.equal(ours[i].time.slice(-5), nginxLine.time.slice(-5));
            assert.deepEqual({ ...ours[i], time: '' }, { ...nginxLine, time: '' }, `${format}: ${JSON.stringify(REQUESTS[i])}`);
          }
        }
        // The lines are lila's only access lines; the others keep lila's prefix.
        assert.match(lilas.combined.stderr, /^lila: round-robin \(http\) listening on /);
      });
    });
  }

  describe('combined over HTTP/2, compared with nginx\'s', () => {
    before(needNginx);

    it('writes HTTP/2.0 as the request line\'s protocol, as nginx does', async () => {
      const backend = await startHttpBackend('A', (req, res) => {
        req.resume();
        res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(BODY) });
        res.end(BODY);
      });
      const nginx = await startNginx(backend.port);
      const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--access-log-format', 'combined']);
      const headers = { ':path': '/h2?x=1', ':authority': 'shop.test', 'user-agent': 'h2 client', referer: 'https://shop.test/' };
      for (const port of [nginx.h2Port, lila.port]) {
        const session = await connectH2(`http://127.0.0.1:${port}`);
        const response = await fetchH2(session, headers);
        assert.equal(String(response.body), BODY);
        session.close();
      }
      await until(() => nginx.lines('combined.log').length === 1, 'nginx\'s line');
      await untilLines(lila, 1);
      const [theirs] = nginx.lines('combined.log').map(parseLine);
      const [ours] = accessLinesOf(lila).map(parseLine);
      assert.equal(ours.request, 'GET /h2?x=1 HTTP/2.0');
      assert.deepEqual({ ...ours, time: '' }, { ...theirs, time: '' });
    });
  });

  describe('text and json', () => {
    it('gain the time, protocol and user agent, and the ids with --request-id', async () => {
      const backend = await startHttpBackend('A');
      const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--access-log-format', 'json', '--request-id']);
      const response = await request(lila.port, { agent: false, path: '/x', headers: { 'User-Agent': 'tester/1', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' } });
      await untilLines(lila, 1, (line) => line.startsWith('{') && line.includes('"msg":"access"'));
      const line = JSON.parse(lila.stderr.split('\n').find((text) => text.includes('"msg":"access"')));
      assert.match(line.time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.deepEqual({ ...line, time: 0, duration_ms: 0 }, {
        time: 0, level: 'info', msg: 'access', client: '127.0.0.1', method: 'GET', path: '/x', protocol: 'HTTP/1.1', status: 200,
        backend: backend.address, duration_ms: 0, bytes: 1, user_agent: 'tester/1',
        request_id: response.headers['x-request-id'], trace_id: '4bf92f3577b34da6a3ce929d0e0e4736'
      });
      // Only access lines take --access-log-format: the others keep --log-format's text.
      assert.match(lila.stderr, /^lila: round-robin \(http\) listening on /);
    });

    it('begin a text line with its time, and write - for a request without a user agent', async () => {
      const backend = await startHttpBackend('A');
      const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--log-format', 'json', '--access-log-format', 'text']);
      await request(lila.port, { agent: false, path: '/y' });
      await untilLines(lila, 1, (line) => line.startsWith('lila: access '));
      const line = lila.stderr.split('\n').find((text) => text.startsWith('lila: access '));
      assert.match(line, new RegExp(
        `^lila: access time=\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z client=127\\.0\\.0\\.1 method=GET path=/y protocol=HTTP/1\\.1 status=200 backend=${backend.address} duration_ms=[0-9.]+ bytes=1 user_agent=-$`
      ));
      assert.equal(JSON.parse(lila.stderr.split('\n')[0]).msg, `round-robin (http) listening on 127.0.0.1:${lila.port} -> 1 server`);
    });

    it('keep a tcp connection\'s line as --log-format writes it, whatever the access format', async () => {
      const echo = await startTcpBackend('E', (socket) => socket.pipe(socket));
      const lila = await startLila(['round-robin', echo.address, '--layer', 'tcp', '-a', '127.0.0.1', '-p', '0', '--access-log-format', 'combined']);
      const socket = net.connect(lila.port, '127.0.0.1');
      socket.end('hello');
      assert.equal((await collect(socket)).toString(), 'hello');
      await untilLines(lila, 1, (line) => line.startsWith('lila: access '));
      assert.match(lila.stderr, /^lila: access time=\S+ client=127\.0\.0\.1 backend=\S+ duration_ms=[0-9.]+ bytes_from_client=5 bytes_to_client=5$/m);
    });
  });

  describe('the command line', () => {
    it('refuses a format it does not know, naming the option', async () => {
      const { code, stderr } = await runLila(['round-robin', '127.0.0.1:1', '--access-log-format', 'apache']);
      assert.equal(code, 2);
      assert.match(stderr, /^lila: "--access-log-format" must be "text" or "json" or "combined" or "common", received "apache"\n/);
    });
  });
});

// Skips a comparison without nginx, unless CI requires it (LILA_REQUIRE_NGINX=1, as .ci/run sets).
function needNginx() {
  skipPeersOff(this, 'nginx');
  if (NGINX !== null) return;
  if (process.env.LILA_REQUIRE_NGINX === '1') throw new Error('LILA_REQUIRE_NGINX=1 but nginx was not found at /usr/sbin/nginx or on PATH');
  this.skip();
}


// Waits until lila has written `count` lines that `accepts` (by default, lines without its prefix).
async function untilLines(lila, count, accepts = (line) => !line.startsWith('lila: ')) {
  await until(() => lila.stderr.split('\n').filter((line) => line !== '' && accepts(line)).length >= count, `${count} access lines from lila`);
}
