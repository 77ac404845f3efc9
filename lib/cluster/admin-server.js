'use strict';

const http = require('node:http');
const DashboardFeed = require('../ops/dashboard/feed');
const { dashboardPage } = require('../ops/dashboard/page');
const { refusePageChange } = require('../ops/dashboard/browser-guard');
const { WorkerFrames, mergeFrames } = require('./worker-frames');
const { mergeStatus, mergeMetrics, mergeRoutes } = require('./merge-answers');

const BODY_LIMIT = 64 * 1024;
const ASK_TIMEOUT_MS = 5000;
// How long the page waits for a worker's figures when no page is open (they are read then).
const FIGURES_TIMEOUT_MS = 1000;
// An event larger than this is no frame of lila's.
const MAX_EVENT_CHARS = 8 * 1024 * 1024;

/**
 * The admin API of `--workers`, served by the primary: each worker runs its
 * own admin API on a private loopback port, and this one asks them all.
 * `GET /status` and `GET /metrics` add up what the workers report, `GET
 * /route` says the key's group is unavailable when any worker has it down
 * (merge-answers.js); a change (`POST`, `DELETE`, `PATCH`) goes to every
 * worker, which checks the token itself; other reads go to one worker. The dashboard (`GET /`) and its
 * events (`GET /events`) are the primary's own, with every worker's figures
 * added up; a web page's changes (with Origin) are checked here, where the
 * page's requests arrive.
 *
 * @param {{adminPorts: () => number[]}} primary
 * @param {import('../ops/logger')} logger
 * @param {{hasToken?: boolean, acme?: {status: () => object[], metrics: () => string}}} [options] hasToken: the workers' admin APIs need a token for changes; acme: --acme's names and families (it runs here)
 * @returns {http.Server & {dashboard: DashboardFeed}} not listening; `dashboard` is the feed of `/events`
 */
function createClusterAdminServer(primary, logger, options = {}) {
  const hasToken = options.hasToken === true;
  // --acme runs here, in the primary: its names and counters are added to what the workers say.
  const acme = options.acme === undefined ? null : options.acme;
  const merge = acme === null ? mergeStatus : (statuses) => ({ ...mergeStatus(statuses), acme: acme.status() });
  const feed = new DashboardFeed(new WorkerFrames(primary, merge), { logger });
  const server = http.createServer((request, response) => {
    if (answerHere(primary, request, response, feed, hasToken, logger)) return;
    answer(primary, request, logger, acme).then((reply) => {
      logger.debug(`admin: ${request.method} ${request.url} ${reply.status} (workers)`);
      respond(request, response, reply);
    }, (err) => {
      logger.warn(`admin: ${request.method} ${request.url}: ${err.message}`);
      response.destroy();
    });
  });
  server.on('clientError', (err, socket) => socket.destroy());
  server.dashboard = feed;
  server.on('close', () => feed.close());
  return server;
}

// How this API adds the workers' answers up, from here as well.
module.exports = { createClusterAdminServer, mergeStatus, mergeMetrics };

// The requests the primary answers itself: a web page's change it refuses,
// the dashboard and its events. Returns whether it answered.
function answerHere(primary, request, response, feed, hasToken, logger) {
  const path = request.url.split('?')[0];
  const read = request.method === 'GET' || request.method === 'HEAD';
  const refusal = read ? null : refusePageChange(request, hasToken);
  let reply = null;
  if (refusal !== null) reply = json(403, { error: refusal });
  else if (read && path === '/') {
    request.resume();
    const figures = request.method === 'HEAD' ? Promise.resolve({}) : dashboardFigures(primary, feed);
    figures.then((shown) => {
      const page = dashboardPage(shown);
      logger.debug(`admin: ${request.method} ${request.url} 200 (workers)`);
      respond(request, response, { status: 200, type: 'text/html; charset=utf-8', body: page.body, headers: page.headers });
    }, (err) => {
      logger.warn(`admin: ${request.method} ${request.url}: ${err.message}`);
      response.destroy();
    });
    return true;
  } else if (read && path === '/events') {
    if (request.method === 'GET') {
      logger.debug(`admin: ${request.method} ${request.url} 200 (workers)`);
      feed.subscribe(response);
      return true;
    }
    reply = { status: 200, type: 'text/event-stream; charset=utf-8', body: '' };
  }
  if (reply === null) return false;
  // A refused change's body is thrown away; while some is unread, the connection closes after the answer.
  request.resume();
  logger.debug(`admin: ${request.method} ${request.url} ${reply.status} (workers)`);
  respond(request, response, reply);
  return true;
}

function respond(request, response, reply) {
  const headers = {
    'Content-Type': reply.type,
    'Content-Length': Buffer.byteLength(reply.body),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...reply.headers
  };
  if (!request.complete) headers.Connection = 'close';
  response.writeHead(reply.status, headers);
  response.end(request.method === 'HEAD' ? undefined : reply.body);
}

async function answer(primary, request, logger, acme) {
  let body;
  try {
    body = await readBody(request);
  } catch {
    return json(413, { error: `the body is larger than ${BODY_LIMIT} bytes` });
  }
  const ports = primary.adminPorts();
  if (ports.length === 0) return json(503, { error: 'no worker is ready yet' });
  const path = request.url.split('?')[0];
  const read = request.method === 'GET' || request.method === 'HEAD';
  try {
    if (read && path === '/status') {
      const replies = await Promise.all(ports.map((port) => ask(port, request, body, 'GET')));
      const ok = replies.filter((reply) => reply.status === 200);
      if (ok.length === 0) return replies[0];
      const status = mergeStatus(ok.map((reply) => JSON.parse(reply.body)));
      return json(200, acme === null ? status : { ...status, acme: acme.status() });
    }
    if (read && path === '/route') {
      const replies = await Promise.all(ports.map((port) => ask(port, request, body, 'GET')));
      if (replies.some((reply) => reply.status !== 200)) return replies.find((reply) => reply.status !== 200);
      return json(200, mergeRoutes(replies.map((reply) => JSON.parse(reply.body))));
    }
    if (read && path === '/metrics') {
      const replies = await Promise.all(ports.map((port) => ask(port, request, body, 'GET')));
      const ok = replies.filter((reply) => reply.status === 200);
      if (ok.length === 0) return replies[0];
      const text = mergeMetrics(ok.map((reply) => reply.body));
      return { status: 200, type: ok[0].type, body: acme === null ? text : text + acme.metrics() };
    }
    if (read) return await ask(ports[0], request, body, 'GET');
    const settled = await Promise.allSettled(ports.map((port) => ask(port, request, body, request.method)));
    const replies = settled.filter((result) => result.status === 'fulfilled').map((result) => result.value);
    if (replies.length === 0) throw settled[0].reason;
    // Workers apply the same change to the same members: they answer alike.
    if (replies.length < ports.length) logger.warn(`admin: ${request.method} ${request.url} reached ${replies.length} of ${ports.length} workers`);
    // A purge: each worker purged its own memory (and the disk the first one reached): the most any one let go.
    if (path === '/cache/purge' && replies.every((reply) => reply.status === 200)) {
      const answers = replies.map((reply) => JSON.parse(reply.body));
      return json(200, { ...answers[0], purged: Math.max(...answers.map((one) => one.purged)) });
    }
    return replies[0];
  } catch (err) {
    return json(502, { error: `a worker did not answer: ${err.message}` });
  }
}

function ask(port, request, body, method) {
  const headers = { ...request.headers };
  delete headers.host;
  delete headers.connection;
  // A page's change was checked against the primary's origin (answerHere);
  // the worker's port is another origin.
  delete headers.origin;
  return new Promise((resolve, reject) => {
    const upstream = http.request({ host: '127.0.0.1', port, method, path: request.url, headers, agent: false });
    upstream.on('error', reject);
    // A stuck worker must not hang the admin API.
    upstream.setTimeout(ASK_TIMEOUT_MS, () => upstream.destroy(new Error(`no answer within ${ASK_TIMEOUT_MS} ms`)));
    upstream.on('response', (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => resolve({
        status: response.statusCode,
        type: response.headers['content-type'] || 'application/json',
        body: Buffer.concat(chunks).toString()
      }));
    });
    upstream.end(body);
  });
}

// The dashboard's figures for a page: while pages listen, the feed's; otherwise every
// worker's first snapshot (read for the page, as the feed would), added up.
async function dashboardFigures(primary, feed) {
  const figures = feed.current();
  if (figures.snapshot !== null) return figures;
  const frames = (await Promise.all(primary.adminPorts().map(firstFrame))).filter((frame) => frame !== null);
  return { history: figures.history, snapshot: frames.length === 0 ? null : mergeFrames(frames, mergeStatus) };
}

// The first snapshot of a worker's /events, or null when none comes in time.
function firstFrame(port) {
  return new Promise((resolve) => {
    const upstream = http.get({ host: '127.0.0.1', port, path: '/events', agent: false, headers: { Accept: 'text/event-stream' } });
    let text = '';
    const done = (frame) => {
      upstream.destroy();
      resolve(frame);
    };
    upstream.on('error', () => done(null));
    upstream.setTimeout(FIGURES_TIMEOUT_MS, () => done(null));
    upstream.on('response', (response) => {
      response.on('error', () => done(null));
      response.on('end', () => done(null));
      if (response.statusCode !== 200) {
        done(null);
        return;
      }
      response.setEncoding('utf8');
      response.on('data', (chunk) => {
        text += chunk;
        const at = text.indexOf('event: snapshot\ndata: ');
        const end = at === -1 ? -1 : text.indexOf('\n\n', at);
        if (end === -1) {
          if (text.length > MAX_EVENT_CHARS) done(null);
          return;
        }
        try {
          done(JSON.parse(text.slice(at + 'event: snapshot\ndata: '.length, end)));
        } catch {
          done(null);
        }
      });
    });
  });
}

function readBody(request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    request.on('data', (chunk) => {
      size += chunk.length;
      if (size > BODY_LIMIT) reject(new Error('too large'));
      else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function json(status, body) {
  return { status, type: 'application/json', body: `${JSON.stringify(body)}\n` };
}
