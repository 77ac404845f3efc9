'use strict';

const http = require('node:http');
const { PassThrough } = require('node:stream');
const { startHttpBackend } = require('./helpers');
const { startConfiguredAdmin } = require('./configured-admin');
const { Logger } = require('../lib');

/**
 * An origin for the cache's tests: an http backend on 127.0.0.1:0 whose
 * answers the test sets per target (`serve`), and that records every
 * request it gets (`requests`, `hits(target)`). A request is answered as
 * its whole target says, else its path, else `*`; with none of them, 200
 * with the origin's name and no caching fields.
 *
 * @param {string} [name]
 * @returns {Promise<Awaited<ReturnType<typeof startHttpBackend>> & {
 *   requests: {method: string, url: string, headers: http.IncomingHttpHeaders}[],
 *   serve: (target: string, answer: Answer) => void,
 *   hits: (target: string) => number,
 *   arrived: (target: string, count?: number) => Promise<void>}>}
 */
async function startOrigin(name = 'origin') {
  const answers = new Map();
  const requests = [];
  const waiting = new Set();
  const origin = await startHttpBackend(name, (req, res) => {
    requests.push({ method: req.method, url: req.url, headers: req.headers });
    for (const wait of waiting) wait();
    const answer = answers.get(req.url) ?? answers.get(req.url.split('?')[0]) ?? answers.get('*');
    const count = requests.filter((seen) => seen.url === req.url).length;
    if (typeof answer === 'function') {
      answer(req, res, count);
      return;
    }
    req.resume();
    const { status = 200, headers = {}, body = name } = answer ?? {};
    res.writeHead(status, headers);
    res.end(typeof body === 'function' ? body(count) : body);
  });
  return Object.assign(origin, {
    requests,
    serve(target, answer) {
      answers.set(target, answer);
    },
    hits(target) {
      return requests.filter((seen) => seen.url === target).length;
    },
    // Resolves once `count` requests for the target arrived (a background fetch the test cannot see).
    arrived(target, count = 1) {
      return new Promise((resolve) => {
        const check = () => {
          if (origin.hits(target) < count) return;
          waiting.delete(check);
          resolve();
        };
        waiting.add(check);
        check();
      });
    }
  });
}

/**
 * @typedef {{status?: number, headers?: object, body?: string | Buffer | ((count: number) => string)}
 *   | ((req: http.IncomingMessage, res: http.ServerResponse, count: number) => void)} Answer
 *   a fixed answer (`body(count)`: the count of requests for the target so far, this one included), or a handler
 */

/**
 * lila with a `--cache` route to one pool, in this process (`createService`
 * with a config text, as the executable runs one), and its admin API; both
 * stopped on cleanup. Its access lines (JSON) are kept in `access`.
 *
 * @param {string[]} servers the pool's servers (`127.0.0.1:port[,h2]`)
 * @param {object} [options]
 * @param {string} [options.engine] fast (default) or node
 * @param {string} [options.route] more of the route line: `--compress`...
 * @param {string} [options.pool] more of the pool line: `--timeout 300ms`...
 * @param {object} [options.cache] the service's cache options (cacheSize, cacheLockTimeout...)
 * @param {string} [options.token] the admin API's token
 * @param {string} [options.listen] more of the listen line
 * @param {string[]} [options.lines] the config's lines after `--engine`, in place of the pool, listen and route lines
 * @returns {Promise<{service: object, port: number, adminPort: number, access: object[], cache: import('../lib/cache/cache'),
 *   accessLine: (path: string) => Promise<object>, accessLines: (path: string, count: number) => Promise<object[]>}>}
 */
async function startCachingLila(servers, options = {}) {
  const lines = [
    `--engine ${options.engine ?? 'fast'}`,
    ...options.lines ?? [
      `pool origin round-robin ${servers.join(' ')} ${options.pool ?? ''}`,
      `listen 127.0.0.1:0 ${options.listen ?? ''}`,
      `  route * origin --cache ${options.route ?? ''}`
    ]
  ];
  const access = [];
  const waiting = new Set();
  const stream = new PassThrough();
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    text += chunk;
    let end;
    while ((end = text.indexOf('\n')) !== -1) {
      const line = text.slice(0, end);
      text = text.slice(end + 1);
      if (line.includes('"msg":"access"')) access.push(JSON.parse(line));
      for (const wait of waiting) wait();
    }
  });
  const logger = new Logger({ level: 'error', format: 'json', access: true, stream });
  const { service, port, adminPort } = await startConfiguredAdmin(lines, { token: options.token, cache: options.cache, logger });
  return {
    service,
    port,
    adminPort,
    access,
    get cache() {
      return service.cache;
    },
    // The first access line of a path, once it is written (lines are written as requests end).
    async accessLine(path) {
      return (await this.accessLines(path, 1))[0];
    },
    // The first `count` access lines of a path, once written.
    accessLines(path, count) {
      return new Promise((resolve) => {
        const check = () => {
          const lines = access.filter((seen) => seen.path === path);
          if (lines.length < count) return;
          waiting.delete(check);
          resolve(lines.slice(0, count));
        };
        waiting.add(check);
        check();
      });
    }
  };
}

/**
 * One HTTP/1.1 request on a connection of its own; the whole response.
 *
 * @param {number} port
 * @param {string} path
 * @param {object} [headers]
 * @param {string} [method]
 * @returns {Promise<{status: number, headers: http.IncomingHttpHeaders, body: string, raw: Buffer}>}
 */
function get(port, path, headers = {}, method = 'GET') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers, method, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        resolve({ status: res.statusCode, headers: res.headers, body: raw.toString(), raw });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * A request with a body (POST, PUT...) on a connection of its own.
 *
 * @param {number} port
 * @param {string} method
 * @param {string} path
 * @param {string} body
 * @param {object} [headers]
 * @returns {Promise<{status: number, headers: http.IncomingHttpHeaders, body: string}>}
 */
function send(port, method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * lila's own member of a Cache-Status field, without its name: `hit; ttl=59`.
 *
 * @param {{headers: http.IncomingHttpHeaders}} response
 * @returns {string | undefined}
 */
function lilaStatus(response) {
  const field = response.headers['cache-status'];
  if (field === undefined) return undefined;
  const members = String(field).split(/,\s*(?=lila)/);
  const own = members.findLast((member) => member.startsWith('lila'));
  return own === undefined ? undefined : own.replace(/^lila;\s*/, '');
}

/**
 * An HTTP-date `seconds` from now (negative: in the past).
 *
 * @param {number} seconds
 * @returns {string}
 */
function httpDate(seconds) {
  return new Date(Date.now() + seconds * 1000).toUTCString();
}

module.exports = { startOrigin, startCachingLila, get, send, lilaStatus, httpDate };
