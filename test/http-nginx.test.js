'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { skipPeersOff } = require('./tools');
const {
  cleanup,
  onCleanup,
  startProxy,
  refusingPort,
  sha256,
  collect,
  keepAliveAgent
} = require('./helpers');

const MB = 1024 * 1024;
const NGINX = findNginx();
// The name clients reach lila by; no nginx server_name matches it.
const SITE = 'app.example';

/**
 * Starts nginx in the foreground on 127.0.0.1 with everything it writes in a
 * fresh temporary directory: a default server with a 2 MB static file and
 * two locations that echo what nginx received, and a virtual host for
 * `server_name 127.0.0.1` with a directory, `/dir/`.
 *
 * @returns {Promise<{port: number, address: string, file: Buffer}>}
 */
async function startNginx() {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'lila-nginx-'));
  onCleanup(() => fs.promises.rm(dir, { recursive: true, force: true }));
  // A port where nothing listens, for nginx to take.
  const port = await refusingPort();
  const file = crypto.randomBytes(2 * MB);
  await fs.promises.mkdir(path.join(dir, 'www'));
  await fs.promises.writeFile(path.join(dir, 'www', 'file.bin'), file);
  await fs.promises.mkdir(path.join(dir, 'www', 'dir'));
  await fs.promises.writeFile(path.join(dir, 'www', 'dir', 'index.html'), 'the index of dir');
  await fs.promises.writeFile(path.join(dir, 'nginx.conf'), nginxConf(dir, port));

  const errorLog = path.join(dir, 'error.log');
  const child = spawn(NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', errorLog, '-g', 'daemon off;'], {
    stdio: ['ignore', 'ignore', 'pipe']
  });
  let output = '';
  child.stderr.setEncoding('utf8').on('data', (text) => { output += text; });
  child.on('error', (err) => { output += `${err.message}\n`; });
  const closed = once(child, 'close');
  onCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
    await closed;
  });

  if (!await untilAccepting(port, child)) {
    const log = await fs.promises.readFile(errorLog, 'utf8').catch(() => '');
    throw new Error(`nginx exited (${child.exitCode ?? child.signalCode}) before accepting connections:\n${output}${log}`);
  }
  return { port, address: `127.0.0.1:${port}`, file };
}

function nginxConf(dir, port) {
  return `
worker_processes 1;
master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  default_type text/plain;

  server {
    listen 127.0.0.1:${port} default_server;
    root ${dir}/www;
    location = / { return 200 "default server: $http_host"; }
    location = /echo-host { return 200 "$http_host $http_x_forwarded_for"; }
    location = /connection { return 200 "$connection $connection_requests"; }
  }

  server {
    listen 127.0.0.1:${port};
    server_name 127.0.0.1;
    location / { return 200 "virtual host 127.0.0.1: $http_host $http_x_forwarded_host"; }
    location /dir { root ${dir}/www; }
  }
}
`;
}

// nginx gives no readiness event: retry a connect until one succeeds, nginx
// exits (false), or 5 s pass.
async function untilAccepting(port, child) {
  const deadline = Date.now() + 5000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    try {
      await connectOnce(port);
      return true;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`nginx did not accept connections on port ${port} within 5 s: ${err.code}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function connectOnce(port) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}

// Sends one request for SITE and collects the body as a Buffer.
async function requestSite(port, options = {}) {
  const req = http.request({ host: '127.0.0.1', port, ...options, headers: { Host: SITE, ...options.headers } });
  req.end();
  const [res] = await once(req, 'response');
  return { status: res.statusCode, headers: res.headers, body: await collect(res) };
}

function countConnections(proxy) {
  const count = { value: 0 };
  proxy.listener.server.on('connection', () => count.value++);
  return count;
}

for (const engine of HTTP_ENGINES) {
  describe(`nginx behind lila (${engine} engine)`, () => {
    before(function () {
      skipPeersOff(this, 'nginx');
      if (NGINX !== null) return;
      if (process.env.LILA_REQUIRE_NGINX === '1') {
        throw new Error('LILA_REQUIRE_NGINX=1 but nginx was not found at /usr/sbin/nginx or on PATH; install it (e.g. apt-get install nginx-light)');
      }
      this.skip();
    });
    afterEach(cleanup);

    it('serves a 2 MB static file unchanged', async () => {
      const nginx = await startNginx();
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [nginx.address] });

      const res = await requestSite(proxy.port, { path: '/file.bin', agent: false });

      assert.equal(res.status, 200);
      assert.equal(res.headers['content-length'], String(2 * MB));
      assert.equal(res.body.length, nginx.file.length);
      assert.equal(sha256(res.body), sha256(nginx.file));
    });

    it('passes Host unchanged and appends the client to X-Forwarded-For', async () => {
      const nginx = await startNginx();
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [nginx.address] });

      const res = await requestSite(proxy.port, { path: '/echo-host', agent: false, headers: { 'X-Forwarded-For': '203.0.113.7' } });

      assert.equal(res.status, 200);
      assert.equal(String(res.body), `${SITE} 203.0.113.7, 127.0.0.1`);
    });

    it('answers HEAD with the headers of the file, no body, and the connection still usable', async () => {
      const nginx = await startNginx();
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [nginx.address] });
      const clientConnections = countConnections(proxy);
      const agent = keepAliveAgent();

      const head = await requestSite(proxy.port, { method: 'HEAD', path: '/file.bin', agent });
      const after = await requestSite(proxy.port, { path: '/echo-host', agent });

      assert.equal(head.status, 200);
      assert.equal(head.headers['content-length'], String(2 * MB));
      assert.equal(head.body.length, 0);
      assert.equal(String(after.body), `${SITE} 127.0.0.1`);
      assert.equal(clientConnections.value, 1);
    });

    it('serves several requests from one keep-alive client over one upstream connection', async () => {
      const nginx = await startNginx();
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [nginx.address] });
      const clientConnections = countConnections(proxy);
      const agent = keepAliveAgent();

      const answers = [];
      for (let i = 0; i < 5; i++) {
        const res = await requestSite(proxy.port, { path: '/connection', agent });
        assert.equal(res.status, 200);
        answers.push(String(res.body).split(' '));
      }

      // nginx numbers its connections, and the requests on each.
      const upstream = answers[0][0];
      assert.deepEqual(answers, [1, 2, 3, 4, 5].map((n) => [upstream, String(n)]));
      assert.equal(clientConnections.value, 1);
    });

    it("reaches an nginx virtual host only when Host is rewritten to the backend's", async () => {
      const nginx = await startNginx();
      const passing = await startProxy({ engine, mode: 'round-robin', servers: [nginx.address] });
      const rewriting = await startProxy({ engine, mode: 'round-robin', servers: [nginx.address], hostHeader: 'backend' });

      const passed = await requestSite(passing.port, { path: '/', agent: false });
      const rewritten = await requestSite(rewriting.port, { path: '/', agent: false });

      assert.equal(String(passed.body), `default server: ${SITE}`);
      // nginx matches server_name against the Host without its port.
      assert.equal(String(rewritten.body), `virtual host 127.0.0.1: 127.0.0.1:${nginx.port} ${SITE}`);
    });

    it('turns the redirect of a directory without its slash, to nginx itself, into one to lila', async () => {
      const nginx = await startNginx();
      // nginx redirects to the host it was sent with its own port: with the backend's Host, its own address.
      const proxy = await startProxy({ engine, mode: 'round-robin', servers: [nginx.address], hostHeader: 'backend' });
      const unchanged = await startProxy({ engine, mode: 'round-robin', servers: [nginx.address], hostHeader: 'backend', locationRewrite: false });

      const lila = `127.0.0.1:${proxy.port}`;

      const redirect = await requestSite(proxy.port, { path: '/dir', agent: false, headers: { Host: lila } });
      const around = await requestSite(unchanged.port, { path: '/dir', agent: false });

      assert.equal(redirect.status, 301);
      assert.equal(redirect.headers.location, `http://${lila}/dir/`);
      assert.equal(around.headers.location, `http://${nginx.address}/dir/`);
      const next = new URL(redirect.headers.location);
      const followed = await requestSite(Number(next.port), { host: next.hostname, path: next.pathname, agent: false, headers: { Host: next.host } });
      assert.equal(followed.status, 200);
      assert.equal(String(followed.body), 'the index of dir');
    });
  });
}

function findNginx() {
  const dirs = (process.env.PATH || '').split(path.delimiter).filter((dir) => dir !== '');
  const candidates = ['/usr/sbin/nginx', ...dirs.map((dir) => path.join(dir, 'nginx'))];
  return candidates.find((file) => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  }) || null;
}
