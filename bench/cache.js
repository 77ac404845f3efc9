'use strict';

const fs = require('node:fs');
const path = require('node:path');
const http = require('node:http');
const crypto = require('node:crypto');
const { once } = require('node:events');
const { freePort } = require('./children');
const { processTree } = require('./proc-stats');
const { nginxCache } = require('./peer-configs');
const { stopRunChild, pinned, openFilesLimit, startListening, exited } = require('./run-kit');
const { ask } = require('./load-process');
const { NGINX, PROXY_CPU, WARMUP_SECONDS, perCpuBench } = require('./per-cpu-rounds');

// Issue 48's loads and goal: hits of small and of 100 KB objects, lila's per CPU-second at least
// 0.8 of nginx's. 100 KB is more than autocannon reads on a core here (about 45 MB/s): that load
// goes to download-load.js's client, as bench/files.js's does. nginx is given what serves each
// load best here: sendfile off (its default) for 1 KB, where sendfile adds a system call to each
// answer (0.9 of its requests per CPU-second with it), on for 100 KB (0.52 without);
// tcp_nopush never: with it, hits of 100 KB stall (a quarter of the requests per second).
const GOAL = 0.8;
const LOADS = [
  { name: '1 KB', prefix: '/1k/', size: 1024, connections: 64, op: 'autocannon', sendfile: false, goal: GOAL },
  { name: '100 KB', prefix: '/100k/', size: 100 * 1024, connections: 64, op: 'downloads', sendfile: true, goal: GOAL }
];
// Objects per load, asked in turn by each connection: no single hot key.
const OBJECTS = 100;
const MAX_AGE = 3600;
// A fixed validator date: a stored answer with an ETag and a Last-Modified, as a site's objects have.
const LAST_MODIFIED = 'Mon, 07 Dec 2026 00:00:00 GMT';
const KEEPALIVE_SECONDS = 75;
const OPEN_FILES = 4096;
const STATUS_HEADER = 'X-Cache-Status';

// `npm run bench:cache [-- --rounds <n>] [--duration <s>] [--load 1KB,100KB] [--lila NAME=PATH]...`:
// lila --cache and nginx proxy_cache in front of the same origin, each alone on the proxy core,
// each warmed with one request per object, then loaded with hits only (the origin's count of
// requests must not move): 100 objects of 1 KB, then of 100 KB, to 64 keep-alive connections;
// requests and megabytes per proxy CPU-second, medians over interleaved rounds. Each `--lila` adds
// the lila executable at PATH (another checkout's) as `lila @NAME`, in the same rounds.
perCpuBench({
  script: __filename,
  loads: LOADS,
  name: 'cache',
  prepare: (run, options) => startOrigin(options.loads),
  measureOne,
  describe
});

// The origin, in this process (it is asked only while the caches warm up): each object's random
// bytes, fresh for an hour, with validators; it counts what it is asked.
async function startOrigin(loads) {
  const objects = new Map();
  for (const load of loads) {
    for (let i = 0; i < OBJECTS; i++) {
      const body = crypto.randomBytes(load.size);
      objects.set(`${load.prefix}${i}`, { body, etag: `"${i}-${load.size}"`, digest: digest(body) });
    }
  }
  const origin = { objects, requests: 0, port: 0, server: null, close: () => origin.server.close().closeAllConnections() };
  origin.server = http.createServer((req, res) => {
    origin.requests++;
    const object = objects.get(req.url);
    if (object === undefined) {
      res.writeHead(404, { 'Content-Length': '0' }).end();
      return;
    }
    res.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(object.body.length),
      'Cache-Control': `max-age=${MAX_AGE}`,
      ETag: object.etag,
      'Last-Modified': LAST_MODIFIED
    });
    res.end(object.body);
  });
  origin.server.listen(0, '127.0.0.1');
  await once(origin.server, 'listening');
  origin.port = origin.server.address().port;
  return origin;
}

// A target's server on the proxy core, on a free port: a new process, and so an empty cache, for each run.
async function startTarget(run, originPort, target, load) {
  const port = await freePort();
  if (target.lila !== null) {
    const args = [target.lila, 'round-robin', `127.0.0.1:${originPort}`, '-a', '127.0.0.1', '-p', String(port), '--cache',
      '--keepalive-timeout', `${KEEPALIVE_SECONDS}s`, '--log-level', 'warn'];
    const [command, commandArgs] = pinned(run, PROXY_CPU, process.execPath, args);
    return { child: await startListening(run, command, commandArgs, port, target.name), port };
  }
  const dir = path.join(run.dir, `nginx-${port}`);
  fs.mkdirSync(dir);
  const file = path.join(dir, 'nginx.conf');
  fs.writeFileSync(file, nginxCache({
    dir, openFiles: openFilesLimit(OPEN_FILES), keepAliveSeconds: KEEPALIVE_SECONDS, port, origin: originPort, statusHeader: STATUS_HEADER,
    sendfile: load.sendfile
  }));
  const [command, args] = pinned(run, PROXY_CPU, NGINX, ['-p', dir, '-c', file, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;']);
  return { child: await startListening(run, command, args, port, 'nginx'), port };
}

// One run: a new server, warmed (one GET per object), checked (each object a hit, its bytes
// exactly), loaded; the origin must get nothing from the check on: the load measures hits only.
async function measureOne(run, origin, target, load, duration) {
  const { child, port } = await startTarget(run, origin.port, target, load);
  const paths = objectPaths(load);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (const urlPath of paths) await get(port, urlPath, agent);
    const asked = origin.requests;
    for (const urlPath of paths) check(target, urlPath, origin.objects.get(urlPath), await get(port, urlPath, agent));
    const pids = processTree(child.pid);
    const sample = await ask(run.load, { op: load.op, port, paths, connections: load.connections, duration, pids });
    if (exited(child)) throw new Error(`${target.name} exited (${child.signalCode || child.exitCode})`);
    const misses = origin.requests - asked;
    if (misses !== 0) throw new Error(`${target.name}: the origin was asked ${misses} times after the warm-up: not only hits were measured`);
    return sample;
  } finally {
    agent.destroy();
    await stopRunChild(run, child);
  }
}

// A check's answer: 200, a hit as the target says it, and the object's bytes.
function check(target, urlPath, object, { status, headers, body }) {
  const said = target.lila === null ? headers[STATUS_HEADER.toLowerCase()] : headers['cache-status'];
  const hit = target.lila === null ? said === 'HIT' : /^lila; hit(;|$)/.test(said ?? '');
  if (status !== 200 || !hit || digest(body) !== object.digest) {
    throw new Error(`${target.name}: ${urlPath} answered ${status} (${said ?? 'no cache status'}) with ${body.length} bytes, ` +
      `not a hit of the object's ${object.body.length}`);
  }
}

function objectPaths(load) {
  return Array.from({ length: OBJECTS }, (_, i) => `${load.prefix}${i}`);
}

function get(port, urlPath, agent) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: urlPath, agent }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

function digest(bytes) {
  return crypto.createHash('sha256').update(bytes).digest('hex');
}

// The setup, as the report says it: what runs, how, and what the columns count.
function describe(options, cores) {
  const loads = options.loads.map((load) => `${load.name} (${load.connections} connections, ${load.op === 'autocannon' ? 'autocannon' : 'download-load.js'})`);
  const sendfile = options.loads.map((load) => `${load.sendfile ? 'on' : 'off'} for ${load.name}`).join(', ');
  return `lila (\`lila round-robin ORIGIN -a 127.0.0.1 -p PORT --cache --keepalive-timeout ${KEEPALIVE_SECONDS}s --log-level warn\`; ` +
    'the fast engine, the memory store) and nginx (one worker, `proxy_cache` as bench/cache-suite.js configures it, ' +
    `\`sendfile\` ${sendfile}, \`add_header ${STATUS_HEADER} $upstream_cache_status\`, keep-alive as bench/compare.js gives it) ` +
    `in front of one origin (Node http, in the bench's process): ${OBJECTS} objects per load of random bytes, each with ` +
    `\`Cache-Control: max-age=${MAX_AGE}\`, an ETag and a Last-Modified; ${cores}; a new process for each run, warmed with one ` +
    'GET per object, then each object checked once (a hit, its bytes whole); the origin asked nothing more in the run (checked). ' +
    `Loads, keep-alive, each connection asking for the objects in turn: ${loads.join(', ')}. ` +
    `${options.rounds} round${options.rounds === 1 ? '' : 's'} of ${options.duration} s per load and target after ` +
    `${WARMUP_SECONDS} s of warm-up, the first target rotating; medians. MB/s: bytes received (heads included; autocannon ` +
    'counts whole answers only, download-load.js every byte) per second, MB = 2^20 bytes. proxy CPU s: user + system of the ' +
    'server, from /proc.';
}
