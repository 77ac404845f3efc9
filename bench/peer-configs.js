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
 * nginx with one worker answering `Hello from <name>\n` on each port, from
 * its configuration: the backends of bench/compare.js. A backend with `tls`
 * serves HTTPS (the `direct` baselines of `--tls`), set as `nginxProxy`'s.
 *
 * @param {Common & {backends: {name: string, port: number, tls?: Tls}[]}} options
 * @returns {string} nginx.conf
 */
function nginxBackends({ dir, openFiles, keepAliveSeconds, backends }) {
  const servers = backends.flatMap(({ name, port, tls }) => [
    '  server {',
    `    listen 127.0.0.1:${port}${tls === undefined ? '' : ' ssl'};`,
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
 * tickets, the backends still over plain http.
 *
 * @param {Common & {module: 'http' | 'stream', port: number, backends: number[], loadModule?: string | null,
 *   tls?: Tls}} options `loadModule` is the path of a dynamic ngx_stream_module.so, see `nginxStreamModule`
 * @returns {string} nginx.conf
 */
function nginxProxy({ dir, openFiles, keepAliveSeconds, module, port, backends, loadModule = null, tls }) {
  const upstream = [
    '  upstream backends {',
    ...backends.map((backend) => `    server 127.0.0.1:${backend};`),
    ...(module === 'http' ? ['    keepalive 64;', '    keepalive_requests 1000000;'] : []),
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
    `    listen 127.0.0.1:${port}${tls === undefined ? '' : ' ssl'};`,
    ...(tls === undefined ? [] : nginxTls(tls)),
    '    location / {',
    '      proxy_pass http://backends;',
    '      proxy_http_version 1.1;',
    '      proxy_set_header Connection "";',
    // What lila sends: the client's Host, X-Forwarded-* and Forwarded ($scheme is https over TLS).
    '      proxy_set_header Host $http_host;',
    '      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
    '      proxy_set_header X-Forwarded-Proto $scheme;',
    '      proxy_set_header X-Forwarded-Host $http_host;',
    '      proxy_set_header Forwarded "for=$remote_addr;host=$http_host;proto=$scheme";',
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
 * HAProxy with one thread in front of `backends`, round-robin, in `http`
 * mode (keep-alive both ways, X-Forwarded-For, -Proto and -Host) or `tcp`.
 * With `tls`, `http` serves HTTPS as lila does: TLS 1.2 and 1.3, session
 * tickets (HAProxy's default), the backends still over plain http.
 *
 * @param {Common & {mode: 'http' | 'tcp', port: number, backends: {name: string, port: number}[], tls?: Tls}} options
 * @returns {string} haproxy.cfg
 */
function haproxyConfig({ openFiles, keepAliveSeconds, mode, port, backends, tls }) {
  // maxconn counts clients, and HAProxy reserves two descriptors for each.
  const maxconn = Math.floor((openFiles - SPARE_FILES) / 2);
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
    `  bind 127.0.0.1:${port}${tls === undefined ? '' : ` ssl crt ${tls.combinedFile} ssl-min-ver TLSv1.2`}`,
    ...(mode === 'http' ? [
      '  option forwardfor',
      `  http-request set-header X-Forwarded-Proto ${tls === undefined ? 'http' : 'https'}`,
      '  http-request set-header X-Forwarded-Host %[req.hdr(host)]'
    ] : []),
    '  default_backend backends',
    'backend backends',
    '  balance roundrobin',
    ...backends.map(({ name, port: backend }) => `  server ${name} 127.0.0.1:${backend}`),
    ''
  ].join('\n');
}

module.exports = { nginxBackends, nginxProxy, nginxStreamModule, haproxyConfig };

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
