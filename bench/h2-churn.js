'use strict';

const http2 = require('node:http2');
const net = require('node:net');
const tls = require('node:tls');

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR } = http2.constants;
// What a browser-like client does, per connection: a few pages' worth of streams, six at a
// time, some cancelled (a tab closed, a navigation), and then it leaves, politely or not.
const STREAMS_PER_SESSION = [1, 30];
const AT_ONCE = 6;
const CANCEL_SHARE = 0.4;
// How a connection ends: GOAWAY and FIN (a browser closing it), FIN without TLS's close_notify,
// a reset (a phone leaving Wi-Fi), or a reset with streams still open.
const LEAVING = [['goaway', 40], ['fin', 20], ['reset', 20], ['reset mid-stream', 20]];
const CLOSE_WAIT_MS = 2000;

/**
 * Browser-like h2 clients against lila for `seconds`: `clients` at once, each
 * opening a connection (TLS with ALPN h2, or h2c by prior knowledge), running
 * a few streams on it, cancelling some, and leaving as LEAVING says, then
 * opening the next. Streams neither cancelled nor cut by their own client's
 * leaving must end with a 200 and a body.
 *
 * @param {object} options
 * @param {number} options.port lila's, at 127.0.0.1
 * @param {boolean} options.tls TLS (certificate not checked), or h2c
 * @param {number} options.clients connections open at once
 * @param {number} options.seconds
 * @param {() => number} options.random in [0, 1)
 * @returns {Promise<{sessions: number, streams: number, cancelled: number, failed: number, firstFailure: string | null}>}
 */
async function churn({ port, tls: overTls, clients, seconds, random }) {
  const counts = { sessions: 0, streams: 0, cancelled: 0, failed: 0, firstFailure: null };
  const until = Date.now() + seconds * 1000;
  const client = async () => {
    while (Date.now() < until) {
      counts.sessions++;
      await oneSession(port, overTls, random, counts);
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  return counts;
}

module.exports = { churn };

async function oneSession(port, overTls, random, counts) {
  const raw = net.connect(port, '127.0.0.1');
  raw.on('error', () => {});
  const socket = overTls ? tls.connect({ socket: raw, servername: 'localhost', rejectUnauthorized: false, ALPNProtocols: ['h2'] }) : raw;
  socket.on('error', () => {});
  const closed = new Promise((resolve) => socket.once('close', resolve));
  const session = http2.connect(overTls ? 'https://localhost' : 'http://localhost', { createConnection: () => socket });
  session.on('error', () => {});
  const leaving = pick(LEAVING, random);
  const total = STREAMS_PER_SESSION[0] + Math.floor(random() * (STREAMS_PER_SESSION[1] - STREAMS_PER_SESSION[0] + 1));
  let started = 0;
  let left = false;
  const worker = async () => {
    while (started < total && !left) {
      started++;
      await oneStream(session, random, counts, () => left);
    }
  };
  const work = Promise.all(Array.from({ length: AT_ONCE }, worker));
  if (leaving === 'reset mid-stream') {
    // Leaves once a few of its streams are under way.
    await new Promise((resolve) => setTimeout(resolve, random() * 20));
    left = true;
    raw.resetAndDestroy();
  } else {
    await work;
    left = true;
    if (leaving === 'goaway') session.close();
    else if (leaving === 'fin') raw.end();
    else raw.resetAndDestroy();
  }
  // A FIN leaves lila to close: the client waits for it, as a browser's socket would, but not
  // for ever: Node's own TLS client can miss it (a write of its own after the FIN fails, and
  // its socket then never writes or reads again). Whether lila closed is judged by its descriptors.
  let timer;
  await Promise.race([closed, new Promise((resolve) => { timer = setTimeout(resolve, CLOSE_WAIT_MS); })]);
  clearTimeout(timer);
  session.destroy();
  raw.destroy();
}

function oneStream(session, random, counts, leftAlready) {
  return new Promise((resolve) => {
    if (session.closed || session.destroyed) return resolve();
    counts.streams++;
    const stream = session.request({ ':path': '/' });
    const cancel = random() < CANCEL_SHARE;
    let status = 0;
    let bytes = 0;
    stream.on('response', (headers) => { status = headers[':status']; });
    stream.on('data', (chunk) => { bytes += chunk.length; });
    stream.on('error', () => {});
    stream.on('close', () => {
      const whole = stream.rstCode === NGHTTP2_NO_ERROR && status === 200 && bytes > 0;
      if (!cancel && !whole && !leftAlready()) {
        counts.failed++;
        counts.firstFailure ??= `status ${status}, RST_STREAM code ${stream.rstCode}, ${bytes} bytes`;
      }
      resolve();
    });
    if (cancel) {
      counts.cancelled++;
      setTimeout(() => {
        if (!stream.closed && !stream.destroyed) stream.close(NGHTTP2_CANCEL);
      }, random() * 10);
    }
  });
}

function pick(weighted, random) {
  let at = random() * weighted.reduce((sum, [, weight]) => sum + weight, 0);
  for (const [value, weight] of weighted) {
    if ((at -= weight) < 0) return value;
  }
  return weighted[weighted.length - 1][0];
}
