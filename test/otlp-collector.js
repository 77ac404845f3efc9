'use strict';

// An OTLP/HTTP receiver for the exporter's tests: a real http server on 127.0.0.1 that takes
// POST /v1/traces in protobuf (read by the tests' own decoder, test/otlp-decode.js) or JSON,
// keeps what it received, and answers as the test says: 200, a status, or never. It can be
// stopped (its port then refuses) and started again on the same port.

const http = require('node:http');
const { once } = require('node:events');
const { decodeTraceRequest } = require('./otlp-decode');
const { onCleanup } = require('./helpers');

/**
 * Starts a collector on a free port; it is closed at cleanup.
 *
 * @returns {Promise<{url: string, port: number, requests: object[], spans: () => object[],
 *   answer: (how: 'ok' | 'hang' | {status: number, headers?: object, body?: string | Buffer}[]) => void,
 *   untilSpans: (count: number) => Promise<object[]>, untilRequests: (count: number) => Promise<object[]>,
 *   inFlight: () => number, mostInFlight: () => number, release: () => void, stop: () => Promise<void>, start: () => Promise<void>}>}
 *   answer: 'ok' (200), 'hang' (nothing, until release()), or the next answers in turn, then 'ok';
 *   requests: each received {path, headers, message} (message as OTLP/JSON has it)
 */
async function startCollector() {
  const requests = [];
  const waiters = [];
  let mode = 'ok';
  let queued = [];
  let held = [];
  let inFlight = 0;
  let most = 0;
  const server = http.createServer((req, res) => {
    inFlight++;
    most = Math.max(most, inFlight);
    res.on('close', () => { inFlight--; });
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const json = req.headers['content-type'] === 'application/json';
      let message;
      try {
        message = json ? JSON.parse(body.toString('utf8')) : decodeTraceRequest(body);
      } catch (err) {
        message = { error: err.message };
      }
      requests.push({ method: req.method, path: req.url, headers: req.headers, message });
      for (const waiter of waiters.splice(0)) waiter();
      const answer = queued.length > 0 ? queued.shift() : mode;
      if (answer === 'hang') return held.push(res);
      if (answer === 'ok') return res.writeHead(200, { 'content-type': req.headers['content-type'] }).end(json ? '{}' : '');
      res.writeHead(answer.status, answer.headers || {}).end(answer.body || '');
    });
  });
  server.keepAliveTimeout = 60000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  const spans = () => requests.flatMap((r) => (r.message.resourceSpans || []).flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans || [])));
  const until = (done) => new Promise((resolve) => {
    const test = () => (done() ? resolve() : waiters.push(test));
    test();
  });
  const release = () => {
    for (const res of held.splice(0)) res.destroy();
  };
  const collector = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    spans,
    answer(how) {
      if (Array.isArray(how)) queued = [...how];
      else mode = how;
    },
    async untilSpans(count) {
      await until(() => spans().length >= count);
      return spans();
    },
    async untilRequests(count) {
      await until(() => requests.length >= count);
      return requests;
    },
    inFlight: () => inFlight,
    mostInFlight: () => most,
    release,
    async stop() {
      release();
      server.closeAllConnections();
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
    async start() {
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
    }
  };
  onCleanup(() => collector.stop());
  return collector;
}

/**
 * A logger that keeps its lines, for the lost and back lines.
 *
 * @returns {{lines: string[], warn: (m: string) => void, info: (m: string) => void, until: (pattern: RegExp) => Promise<string>}}
 */
function recordingLogger() {
  const waiters = [];
  const logger = {
    lines: [],
    warn: (message) => logger.write(`warn: ${message}`),
    info: (message) => logger.write(`info: ${message}`),
    write(line) {
      logger.lines.push(line);
      for (const waiter of waiters.splice(0)) waiter();
    },
    until(pattern) {
      return new Promise((resolve) => {
        const test = () => {
          const line = logger.lines.find((l) => pattern.test(l));
          if (line === undefined) waiters.push(test);
          else resolve(line);
        };
        test();
      });
    }
  };
  return logger;
}

module.exports = { startCollector, recordingLogger };
