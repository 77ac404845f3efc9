'use strict';

const net = require('node:net');
const autocannon = require('autocannon');
const { cpuDuring } = require('./proc-stats');
const { serveLoad } = require('./load-process');
const { handshakes } = require('./tls-load');
const { h2load } = require('./h2-load');
const { unaryCalls } = require('./grpc-load');

const WARMUP_SECONDS = 1;
// Idle connections are opened this many at a time, well under a listen backlog of 511.
const OPEN_IN_PARALLEL = 100;
const OPEN_TIMEOUT_MS = 10000;
// Time for the proxy to finish with the connections just opened before its memory is read.
const SETTLE_MS = 1000;
const REQUEST = Buffer.from('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
const OPS = { run, handshakes, h2load, unaryCalls, open, release };

const kUsed = Symbol('kUsed');
const kClosed = Symbol('kClosed');

const idle = [];

/**
 * Drives one target with autocannon: `WARMUP_SECONDS` of warm-up, then
 * `duration` seconds measured, reading the CPU time of `pids` right before
 * and after the measured run.
 *
 * @param {object} options
 * @param {number} options.port at 127.0.0.1
 * @param {number} options.connections
 * @param {boolean} options.close send `Connection: close`, one request per connection
 * @param {number} options.duration seconds
 * @param {number[]} options.pids the proxy's process tree; empty for none
 * @param {string} [options.servername] HTTPS, sending this SNI name; plain http without it
 * @returns {Promise<{rps: number, requests: number, p50: number, p99: number, errors: number, cpu: number | null}>}
 *   latencies in ms, `cpu` in seconds
 */
async function run({ port, connections, close, duration, pids, servername }) {
  const scheme = servername === undefined ? 'http' : 'https';
  const options = { url: `${scheme}://127.0.0.1:${port}/`, connections };
  if (servername !== undefined) options.servername = servername;
  if (close) options.headers = { connection: 'close' };
  await autocannon({ ...options, duration: WARMUP_SECONDS, setupClient: clientSetup(close, null) });
  const latencies = [];
  const { value: result, cpu } = await cpuDuring(pids, () => autocannon({ ...options, duration, setupClient: clientSetup(close, latencies) }));
  const sorted = Float64Array.from(latencies).sort();
  return {
    rps: result.requests.average,
    requests: result.requests.total,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    errors: result.errors + result.timeouts + result.non2xx,
    cpu
  };
}

/**
 * Opens `count` connections, sends one request on each and keeps them open
 * and idle once the response is in; waits `SETTLE_MS` and counts how many
 * are still open.
 *
 * @param {{port: number, count: number}} options
 * @returns {Promise<{open: number, failed: number, error: string | null}>}
 */
async function open({ port, count }) {
  let started = 0;
  let failed = 0;
  let error = null;
  const opener = async () => {
    while (started < count) {
      started++;
      try {
        idle.push(await openIdle(port));
      } catch (err) {
        failed++;
        error ??= err.message;
      }
    }
  };
  await Promise.all(Array.from({ length: OPEN_IN_PARALLEL }, opener));
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  return { open: idle.filter((socket) => !socket[kClosed]).length, failed, error };
}

/**
 * Closes the connections `open` left idle.
 *
 * @returns {Promise<{closed: number}>}
 */
async function release() {
  const closed = idle.length;
  for (const socket of idle.splice(0)) socket.destroy();
  return { closed };
}

module.exports = { run, handshakes, h2load, unaryCalls, open, release };

// autocannon's histogram keeps whole milliseconds, most of these latencies are
// below one: the clients report each 2xx response's time to `latencies` as well.
// With `close`, a client writes its next request on the connection the server
// is closing and counts a response to it against the request after (autocannon
// 9 reconnects on 'end' without dropping it); so each connection gets one
// request, the next waits for the new connection. `_doRequest` is autocannon's
// own, as of 9.0.
function clientSetup(close, latencies) {
  return (client) => {
    if (latencies !== null) {
      client.on('response', (status, bytes, duration) => {
        if (status >= 200 && status < 300) latencies.push(duration);
      });
    }
    if (!close) return;
    const doRequest = client._doRequest;
    client._doRequest = function doRequestOncePerConnection() {
      if (this.conn[kUsed]) return;
      this.conn[kUsed] = true;
      doRequest.call(this);
    };
  };
}

function percentile(sorted, fraction) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}

function openIdle(port) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const fail = (err) => {
      socket.destroy();
      reject(err);
    };
    socket.setTimeout(OPEN_TIMEOUT_MS, () => fail(new Error(`no response within ${OPEN_TIMEOUT_MS} ms`)));
    socket.once('connect', () => socket.write(REQUEST));
    socket.on('error', fail);
    socket.once('close', () => {
      socket[kClosed] = true;
      reject(new Error('closed before the response'));
    });
    socket.on('data', function idleOnData(chunk) {
      received += chunk.toString('latin1');
      if (!responseComplete(received)) return;
      socket.setTimeout(0);
      socket.removeListener('data', idleOnData);
      socket.on('data', () => {});
      resolve(socket);
    });
  });
}

// The backends answer with Content-Length, and no proxy here turns that into chunks.
function responseComplete(text) {
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return false;
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, end));
  return length !== null && text.length - end - 4 >= Number(length[1]);
}

// `node bench/load.js`, spawned by bench/compare.js with an IPC channel: the
// load process of bench/load-process.js, running the op each message names.
if (require.main === module) serveLoad((message) => OPS[message.op](message), release);
