'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

// Descriptors a server needs besides those of its connections.
const SPARE_FILES = 100;
const NGINX_TEMP_PATHS = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'];

/**
 * @typedef {object} Common
 * @property {string} dir where the server writes everything: pid, logs, temp files
 * @property {number} openFiles the open files limit it runs with
 * @property {number} keepAliveSeconds how long it keeps an idle client connection
 */

/**
 * @typedef {object} Tls a certificate to serve, as bench/certificates.js makes them
 * @property {string} certFile
 * @property {string} keyFile
 * @property {string} combinedFile the certificate, then its key
 */

/**
 * @typedef {'listen' | 'directive'} Http2Syntax how this nginx turns on
 *   HTTP/2: `listen ... http2` (before 1.25.1) or `http2 on;` (1.25.1 and
 *   later), see `nginxHttp2Syntax`
 */

/**
 * nginx with one worker answering `Hello from <name>\n` on each port, from
 * its configuration: the backends of bench/compare.js. A backend with `tls`
 * serves HTTPS (the `direct` baselines of `--tls`), set as `nginxProxy`'s;
 * one with `http2` serves HTTP/2 (over TLS with `tls`, else h2c by prior
 * knowledge only: the `direct` baselines of `--h2`).
 *
 * @param {Common & {backends: {name: string, port: number, tls?: Tls, http2?: Http2Syntax}[]}} options
 * @returns {string} nginx.conf
 */
function nginxBackends({ dir, openFiles, keepAliveSeconds, backends }) {
  const servers = backends.flatMap(({ name, port, tls, http2 }) => [
    '  server {',
    ...nginxListen(port, tls, http2),
    ...(tls === undefined ? [] : nginxTls(tls)),
    `    location / { return 200 "Hello from ${name}\\n"; }`,
    '  }'
  ]);
  const http = ['http {', ...nginxHttpBasics(dir, keepAliveSeconds), '  default_type text/plain;', ...servers, '}'];
  return nginxMain({ dir, openFiles, body: http });
}

/**
 * nginx with one worker in front of `backends`, round-robin: `http`, with
 * keep-alive upstream connections and the headers lila sends, or `stream`.
 * With `tls`, `http` serves HTTPS as lila does: TLS 1.2 and 1.3, session
 * tickets, the backends still over plain http. With `http2`, `http` serves
 * HTTP/2 to clients (ALPN `h2` over TLS, h2c by prior knowledge without),
 * the backends still HTTP/1.1 with keep-alive; with `grpc` as well, `http`
 * passes gRPC calls to gRPC backends (`grpc_pass`: h2c, one call per
 * upstream connection at a time, idle ones kept), the same headers set.
 *
 * @param {Common & {module: 'http' | 'stream', port: number, backends: number[], loadModule?: string | null,
 *   tls?: Tls, http2?: Http2Syntax, grpc?: boolean, keepalive?: number}} options `loadModule` is the path
 *   of a dynamic ngx_stream_module.so, see `nginxStreamModule`; `keepalive` the idle upstream connections
 *   kept (64; as many as requests in flight for HTTP/2 clients, which need an upstream connection each)
 * @returns {string} nginx.conf
 */
function nginxProxy({ dir, openFiles, keepAliveSeconds, module, port, backends, loadModule = null, tls, http2, grpc = false,
  keepalive = 64 }) {
  const upstream = [
    '  upstream backends {',
    ...backends.map((backend) => `    server 127.0.0.1:${backend};`),
    ...(module === 'http' ? [`    keepalive ${keepalive};`, '    keepalive_requests 1000000;'] : []),
    '  }'
  ];
  if (module === 'stream') {
    const stream = ['stream {', ...upstream, `  server { listen 127.0.0.1:${port}; proxy_pass backends; }`, '}'];
    return nginxMain({ dir, openFiles, loadModule, body: stream });
  }
  const http = [
    'http {',
    ...nginxHttpBasics(dir, keepAliveSeconds),
    ...upstream,
    '  server {',
    ...nginxListen(port, tls, http2),
    ...(tls === undefined ? [] : nginxTls(tls)),
    '    location / {',
    ...(grpc ? ['      grpc_pass grpc://backends;'] : [
      '      proxy_pass http://backends;',
      '      proxy_http_version 1.1;',
      '      proxy_set_header Connection "";'
    ]),
    // What lila sends: the client's Host, X-Forwarded-* and Forwarded ($scheme is https over TLS).
    ...[
      'Host $http_host',
      'X-Forwarded-For $proxy_add_x_forwarded_for',
      'X-Forwarded-Proto $scheme',
      'X-Forwarded-Host $http_host',
      'Forwarded "for=$remote_addr;host=$http_host;proto=$scheme"'
    ].map((header) => `      ${grpc ? 'grpc' : 'proxy'}_set_header ${header};`),
    '    }',
    '  }',
    '}'
  ];
  return nginxMain({ dir, openFiles, body: http });
}

/**
 * Whether this nginx has the stream module: compiled in, or a dynamic module
 * that `nginx -t` loads.
 *
 * @param {string} nginx the executable
 * @returns {{error: null, loadModule: string | null} | {error: string}}
 */
function nginxStreamModule(nginx) {
  const built = spawnSync(nginx, ['-V'], { encoding: 'utf8' }).stderr || '';
  let loadModule = null;
  if (/--with-stream=dynamic/.test(built)) {
    const modules = /--modules-path=(\S+)/.exec(built);
    loadModule = path.join(modules === null ? '/usr/lib/nginx/modules' : modules[1], 'ngx_stream_module.so');
    if (!fs.existsSync(loadModule)) {
      return { error: `the stream module is dynamic in this nginx and ${loadModule} is not installed (apt-get install libnginx-mod-stream)` };
    }
  } else if (!/--with-stream(\s|$)/.test(built)) {
    return { error: 'this nginx is built without the stream module' };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-compare-stream-'));
  try {
    const file = path.join(dir, 'nginx.conf');
    const stream = ['stream { server { listen 127.0.0.1:1; proxy_pass 127.0.0.1:2; } }'];
    fs.writeFileSync(file, nginxMain({ dir, openFiles: 1024, loadModule, body: stream }));
    const test = spawnSync(nginx, ['-t', '-p', dir, '-c', file, '-e', path.join(dir, 'error.log')], { encoding: 'utf8' });
    if (test.status !== 0) return { error: `nginx -t refuses a stream block: ${test.stderr.trim().split('\n')[0]}` };
    return { error: null, loadModule };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Which syntax this nginx turns HTTP/2 on with: `http2 on;` from 1.25.1,
 * `listen ... http2` before (Debian 12 has 1.22).
 *
 * @param {string} nginx the executable
 * @returns {Http2Syntax}
 */
function nginxHttp2Syntax(nginx) {
  const version = /nginx\/(\d+)\.(\d+)\.(\d+)/.exec(spawnSync(nginx, ['-v'], { encoding: 'utf8' }).stderr || '');
  if (version === null) return 'directive';
  const [major, minor, patch] = version.slice(1).map(Number);
  const since = major * 1e6 + minor * 1e3 + patch >= 1025001;
  return since ? 'directive' : 'listen';
}

/**
 * HAProxy with one thread in front of `backends`, round-robin, in `http`
 * mode (keep-alive both ways, `http-reuse always`, X-Forwarded-For, -Proto
 * and -Host) or `tcp`.
 * With `tls`, `http` serves HTTPS as lila does: TLS 1.2 and 1.3, session
 * tickets (HAProxy's default), the backends still over plain http. With
 * `http2`, `http` serves HTTP/2 to clients: ALPN `h2,http/1.1` over TLS,
 * `proto h2` (h2c by prior knowledge only) without; the backends still
 * HTTP/1.1 with keep-alive unless `http2Backends` (h2c, `proto h2`: gRPC
 * backends, calls multiplexed on HAProxy's connections to them).
 *
 * @param {Common & {mode: 'http' | 'tcp', port: number, backends: {name: string, port: number}[], tls?: Tls,
 *   http2?: boolean, http2Backends?: boolean}} options
 * @returns {string} haproxy.cfg
 */
function haproxyConfig({ openFiles, keepAliveSeconds, mode, port, backends, tls, http2 = false, http2Backends = false }) {
  // maxconn counts clients, and HAProxy reserves two descriptors for each.
  const maxconn = Math.floor((openFiles - SPARE_FILES) / 2);
  const ssl = tls === undefined ? '' : ` ssl crt ${tls.combinedFile} ssl-min-ver TLSv1.2`;
  const h2 = !http2 ? '' : tls === undefined ? ' proto h2' : ' alpn h2,http/1.1';
  return [
    'global',
    `  maxconn ${maxconn}`,
    '  nbthread 1',
    'defaults',
    `  mode ${mode}`,
    `  maxconn ${maxconn}`,
    '  timeout connect 5s',
    `  timeout client ${keepAliveSeconds}s`,
    '  timeout server 60s',
    ...(mode === 'http' ? [`  timeout http-keep-alive ${keepAliveSeconds}s`] : []),
    'frontend clients',
    `  bind 127.0.0.1:${port}${ssl}${h2}`,
    ...(mode === 'http' ? [
      '  option forwardfor',
      `  http-request set-header X-Forwarded-Proto ${tls === undefined ? 'http' : 'https'}`,
      '  http-request set-header X-Forwarded-Host %[req.hdr(host)]'
    ] : []),
    '  default_backend backends',
    'backend backends',
    '  balance roundrobin',
    // Every request on an idle upstream connection when there is one, as lila and nginx do: HAProxy's
    // default (safe) gives a client connection's first request a connection of its own, a connect
    // per request under `Connection: close` (16 800 against 26 500 requests per CPU-second here).
    ...(mode === 'http' ? ['  http-reuse always'] : []),
    ...backends.map(({ name, port: backend }) => `  server ${name} 127.0.0.1:${backend}${http2Backends ? ' proto h2' : ''}`),
    ''
  ].join('\n');
}

/**
 * nginx with one worker caching what `origin` answers (`proxy_cache`), as the HTTP working
 * group's cache tests configure it (docker/nginx/nginx.conf: `proxy_cache_revalidate on`, HTTP/1.1
 * upstream), with `proxy_cache_lock on` (collapsed misses, as lila's cache does) and no
 * `proxy_cache_valid`, so that only the answers' headers say what is stored and for how long.
 * For bench/cache.js, `statusHeader` names a header that tells each answer's
 * `$upstream_cache_status` (HIT, MISS...), and `sendfile` turns `sendfile` on: a stored body
 * goes from the cache file to the socket (without `tcp_nopush`, which Debian's nginx.conf adds:
 * with it, hits of 100 KB stall here, a quarter of the requests per second).
 *
 * @param {Common & {port: number, origin: number, statusHeader?: string | null, sendfile?: boolean}} options
 * @returns {string} nginx.conf
 */
function nginxCache({ dir, openFiles, keepAliveSeconds, port, origin, statusHeader = null, sendfile = false }) {
  const http = [
    'http {',
    ...nginxHttpBasics(dir, keepAliveSeconds),
    ...(sendfile ? ['  sendfile on;'] : []),
    `  proxy_cache_path ${dir}/cache levels=1:2 keys_zone=suite:8m;`,
    '  server {',
    ...nginxListen(port),
    '    location / {',
    `      proxy_pass http://127.0.0.1:${origin};`,
    '      proxy_http_version 1.1;',
    '      proxy_cache suite;',
    '      proxy_cache_revalidate on;',
    '      proxy_cache_lock on;',
    ...(statusHeader === null ? [] : [`      add_header ${statusHeader} $upstream_cache_status;`]),
    '    }',
    '  }',
    '}'
  ];
  return nginxMain({ dir, openFiles, body: http });
}

module.exports = { nginxBackends, nginxProxy, nginxCache, nginxStreamModule, nginxHttp2Syntax, haproxyConfig };

// One worker, run as the current user, everything it writes in `dir`.
function nginxMain({ dir, openFiles, loadModule = null, body }) {
  return [
    ...(loadModule === null ? [] : [`load_module ${loadModule};`]),
    // The user directive only counts for root, which nginx would otherwise leave for nobody.
    ...(process.getuid() === 0 ? [`user ${os.userInfo().username};`] : []),
    'worker_processes 1;',
    `worker_rlimit_nofile ${openFiles};`,
    `pid ${dir}/nginx.pid;`,
    `error_log ${dir}/error.log warn;`,
    // A worker connection is a client's or an upstream's.
    `events { worker_connections ${openFiles - SPARE_FILES}; }`,
    ...body,
    ''
  ].join('\n');
}

function nginxListen(port, tls, http2) {
  const ssl = tls === undefined ? '' : ' ssl';
  if (http2 === undefined) return [`    listen 127.0.0.1:${port}${ssl};`];
  if (http2 === 'listen') return [`    listen 127.0.0.1:${port}${ssl} http2;`];
  return [`    listen 127.0.0.1:${port}${ssl};`, '    http2 on;'];
}

// lila's defaults: TLS 1.2 and up, session tickets (nginx's default, said anyway), no session cache.
function nginxTls({ certFile, keyFile }) {
  return [
    `    ssl_certificate ${certFile};`,
    `    ssl_certificate_key ${keyFile};`,
    '    ssl_protocols TLSv1.2 TLSv1.3;',
    '    ssl_session_tickets on;'
  ];
}

function nginxHttpBasics(dir, keepAliveSeconds) {
  return [
    '  access_log off;',
    ...NGINX_TEMP_PATHS.map((temp) => `  ${temp}_temp_path ${dir}/${temp};`),
    `  keepalive_timeout ${keepAliveSeconds}s;`,
    // nginx's default closes a connection after 1000 requests; lila, Node and HAProxy do not.
    '  keepalive_requests 1000000;'
  ];
}
